#!/bin/bash
# Builds PostgreSQL <major> (17, 18) from Debian's official source package
# into a private prefix, so that the test suite can also run on versions
# other than the reference 15 (AUTOCDC_PG=<major> bash test/run-tests.sh).
# Run as root on Debian 12; prints the prefix's bin directory.
#   AUTOCDC_PG_CACHE=dir  where prefixes and sources are kept between runs
#                         (default /var/cache/autocdc-pg; prefix dir/<major>)
# Only a deb-src entry is added for the suite that has the package, so that
# the binary packages apt installs stay bookworm's.  The upstream tarball of
# the source package is built, without Debian's packaging patches; the build
# is skipped when the prefix's stamp names the version Debian has now.
# Exits 3 when the mirror has no source package of that major, or refuses
# its files (nothing is built).
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then echo "run as root" >&2; exit 1; fi
major=${1:-}
case "$major" in
17) suite=trixie ;;
18) suite=forky ;;
*) echo "usage: $0 17|18" >&2; exit 2 ;;
esac
pkg=postgresql-$major
cache=${AUTOCDC_PG_CACHE:-/var/cache/autocdc-pg}
prefix=$cache/$major
export DEBIAN_FRONTEND=noninteractive

# the deb-src entry, on the mirror that the machine's bookworm entry uses
list=/etc/apt/sources.list.d/autocdc-pg-src-$suite.sources
if [ ! -f "$list" ]; then
	mirror=$({ grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list || true; } |
		sed -n 's|^deb \(\[[^]]*\] \)\?\([^ ]*\) bookworm .*|\2|p' | head -1)
	[ -n "$mirror" ] || mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
		awk -v RS= '/\nSuites:[^\n]* bookworm( |\n|$)/ || /\nSuites: bookworm( |\n|$)/ {
			if (match($0, /URIs: *[^ \n]+/)) { u = substr($0, RSTART, RLENGTH); sub(/URIs: */, "", u); print u; exit } }' || true)
	cat >"$list" <<EOF
# added by autocdc's test/pgbuild.sh: sources only, no binary packages
Types: deb-src
URIs: ${mirror:-http://deb.debian.org/debian}
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
	apt-get update -qq
fi
version() { apt-cache showsrc "$pkg" 2>/dev/null | sed -n 's/^Version: //p' | sort -V | tail -1; }
ver=$(version)
if [ -z "$ver" ] || [ "${CI:-}" = true ]; then
	apt-get update -qq
	ver=$(version)
fi
if [ -z "$ver" ]; then echo "no source package $pkg in $suite" >&2; exit 3; fi
# build tools, and what the suite needs (run-tests.sh)
need=()
for p in dpkg-dev make gcc bison flex pkg-config libreadline-dev zlib1g-dev libicu-dev \
	libipc-run-perl; do
	dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	apt-get install -y -qq "${need[@]}" >/dev/null
fi

# the contrib modules the suite uses: test_decoding (070_worker.pl),
# auto_explain (062_snapshot_join.pl reads plans); a prefix built with
# fewer is rebuilt
contribs="test_decoding auto_explain"
stamp="$pkg $ver ($contribs)"
if [ -x "$prefix/bin/pg_config" ] && [ "$(cat "$prefix/.autocdc-stamp" 2>/dev/null)" = "$stamp" ]; then
	echo "$prefix/bin"
	exit 0
fi

# apt-get verifies the files against the signed index; the upstream
# tarball is the one named *.orig.tar.*
src=$cache/src/$major
rm -rf "$src"
mkdir -p "$src"
chown _apt "$src" 2>/dev/null || true	# apt downloads as _apt where it can
if ! (cd "$src" && apt-get source -d -qq "$pkg=$ver" >"$src/fetch.log" 2>&1); then
	grep '^E:' "$src/fetch.log" >&2 || cat "$src/fetch.log" >&2
	echo "the source of $stamp cannot be downloaded from the mirror" >&2
	exit 3
fi
orig=("$src/${pkg}_${ver%-*}".orig.tar.*)
if [ ! -f "${orig[0]}" ]; then echo "no upstream tarball for $stamp" >&2; exit 1; fi
tar -xf "${orig[0]}" -C "$src"
cd "$src"/postgresql-*/

rm -rf "$prefix"
echo "building $stamp into $prefix" >&2
start=$SECONDS
./configure -q --prefix="$prefix" --enable-tap-tests --enable-debug --with-icu >build.log 2>&1 ||
	{ tail -30 build.log >&2; exit 1; }
install_contribs() {
	local c
	for c in $contribs; do make -s -C "contrib/$c" install || return 1; done
}
{ make -s -j2 && make -s install && install_contribs; } >>build.log 2>&1 ||
	{ tail -50 build.log >&2; exit 1; }
chmod -R a+rX "$prefix"
chmod a+rx "$cache"
echo "$stamp" >"$prefix/.autocdc-stamp"
echo "built $stamp in $((SECONDS - start))s" >&2
rm -rf "$src"/postgresql-*/
echo "$prefix/bin"
