#!/bin/bash
# Builds autocdc's Debian package in a fresh root of SUITE (bookworm, trixie)
# with `dpkg-buildpackage -us -uc -b` (which runs the regression suite
# against the files to be packaged, debian/rules), then installs the package
# into another fresh root that has nothing but Debian's base system and runs
# there, against the installed files only (no make install): the checks of
# its contents, test/demo.sh, and the package's own test
# (debian/tests/installcheck: pg_buildext installcheck).  Run as root:
#     bash test/package.sh [SUITE]      (default bookworm)
# The packages are left in $AUTOCDC_DEBS (default /var/tmp/autocdc-debs/SUITE).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
suite=${1:-bookworm}
out=${AUTOCDC_DEBS:-/var/tmp/autocdc-debs/$suite}
rm -rf "$out"
mkdir -p "$(dirname "$out")"
start=$SECONDS

# the build, with the build dependencies that debian/control names
# (baked into the cached root: the same list)
bash "$here/test/inroot.sh" --pkgs "build-essential dpkg-dev debhelper postgresql-all" \
	--copy-out /out:"$out" "$suite" sh -ec '
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get build-dep -y -qq --no-install-recommends ./ >/dev/null
	mkdir -p /build /out
	cp -a /autocdc /build/autocdc
	cd /build/autocdc
	dpkg-buildpackage -us -uc -b >/build/log 2>&1 || { tail -80 /build/log; exit 1; }
	grep -E "^(### |test |ok |not ok|# |.*tests passed|.*failed)" /build/log | head -60
	cp /build/*.deb /out/'
echo "built in $((SECONDS - start)) s: $(cd "$out" && ls)"

# a clean root: the package from apt, with only what it depends on
bash "$here/test/inroot.sh" --copy-in "$out:/debs" "$suite" sh -ec '
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends /debs/postgresql-*-autocdc_*.deb >/dev/null
	for deb in /debs/postgresql-*-autocdc_*.deb; do
		pkg=$(dpkg-deb -f "$deb" Package)
		files=$(dpkg -L "$pkg")
		for f in /autocdc.so /extension/autocdc.control /extension/autocdc--0.3.sql /extension/autocdc--0.2--0.3.sql; do
			echo "$files" | grep -q "$f\$" || { echo "$pkg lacks $f"; exit 1; }
		done
		if echo "$files" | grep -E "/(test|sql|expected)/|\.pl\$"; then echo "$pkg ships tests"; exit 1; fi
		echo "$pkg: $(echo "$files" | wc -l) paths, the library and the extension files, no tests"
	done
	# the demo, on the installed files (the distribution'"'"'s PostgreSQL)
	AUTOCDC_SKIP_SETUP=1 bash test/demo.sh >/tmp/demo.out 2>&1 || { tail -40 /tmp/demo.out; exit 1; }
	tail -1 /tmp/demo.out
	# the package test, as autopkgtest runs it (its Depends: make, postgresql-server-dev-all)
	apt-get install -y -qq --no-install-recommends make postgresql-server-dev-all >/dev/null
	cp -a /autocdc /tmp/autocdc && cd /tmp/autocdc
	debian/tests/installcheck >/tmp/installcheck.out 2>&1 || { tail -80 /tmp/installcheck.out; exit 1; }
	grep -E "^(###|# |ok |not ok|.*tests passed|.*failed)" /tmp/installcheck.out | head -40'
echo "Debian package on $suite: built, installed, demo and installcheck passed in $((SECONDS - start)) s"
