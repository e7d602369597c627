#!/bin/bash
# Installs what autocdc needs on Debian (as root), then builds and installs
# autocdc, and prints the bin directory of the PostgreSQL it was installed
# into (everything else goes to stderr).  The PostgreSQL is the one the
# distribution ships (test/pgmajor.sh: 15 on Debian 12, 17 on Debian 13)
# unless AUTOCDC_PG=MAJOR says otherwise; a major that Debian's archive has
# as packages is installed from them (from experimental when only that has
# it), one it does not have is built from Debian's source package by
# test/pgbuild.sh (18 on Debian 12).  Exits 3 when the machine's Debian
# mirror offers that major neither as packages nor as source (nothing was
# installed): the major cannot be had here, which is not a failure of
# autocdc's.
set -euo pipefail
cd "$(dirname "$0")/.."
exec 3>&1 1>&2
if [ "$(id -u)" -ne 0 ]; then echo "run as root" >&2; exit 1; fi
. test/pgmajor.sh
export DEBIAN_FRONTEND=noninteractive
updated=""
apt_update() { [ -n "$updated" ] || apt-get update -qq; updated=1; }
# installs the packages that are missing; fails when one cannot be had
apt_need() {
	local p need=()
	for p in "$@"; do dpkg -s "$p" 2>/dev/null | grep -q '^Status:.* installed' || need+=("$p"); done
	[ ${#need[@]} -gt 0 ] || return 0
	apt_update
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}
apt_need libipc-run-perl make gcc
pg=$(autocdc_pg_major)
# has the archive packages of this major (a candidate, or in experimental)?
# The distribution's own major (no AUTOCDC_PG) always is: when apt's lists
# lack it (apt-get update ignores an index the mirror failed to send, and a
# mirror being synchronised may send one without it for a while), they are
# fetched again, four times over two minutes, before the source build is
# tried.
packaged() {
	local try wait
	[ -x "/usr/lib/postgresql/$pg/bin/pg_config" ] && dpkg -s "postgresql-$pg" >/dev/null 2>&1 && return 0
	try=1
	for wait in 10 20 30 60 0; do
		apt_update
		apt-cache madison "postgresql-$pg" 2>/dev/null | grep -q " Packages$" && return 0
		[ -z "${AUTOCDC_PG:-}" ] && [ $wait -gt 0 ] || return 1
		echo "postgresql-$pg is not in apt's lists (try $try): fetching them again in $wait s" >&2
		sleep "$wait"
		try=$((try + 1))
		updated=""
	done
}
if packaged; then
	pkgs=("postgresql-$pg" "postgresql-server-dev-$pg" "postgresql-client-$pg")
	if ! apt_need "${pkgs[@]}"; then
		# only experimental has it (Debian's next PostgreSQL)
		apt-get install -y -qq --no-install-recommends -t experimental "${pkgs[@]}" >/dev/null
	fi
	bin=/usr/lib/postgresql/$pg/bin
else
	echo "PostgreSQL $pg is not packaged for this Debian: building it from source" >&2
	s=0
	bin=$(bash test/pgbuild.sh "$pg") || s=$?
	if [ $s -eq 3 ]; then
		echo "PostgreSQL $pg can be had neither as Debian's packages nor as their source from this machine's mirror" >&2
	fi
	[ $s -eq 0 ] || exit $s
	# the account the clusters run as (the packages create it)
	id -u postgres >/dev/null 2>&1 ||
		useradd --system --home-dir /var/lib/postgresql --create-home --shell /bin/bash --user-group postgres
fi
# objects built for another version are rebuilt
stamp=.autocdc-built-for
if [ "$(cat "$stamp" 2>/dev/null)" != "$bin" ]; then make -s PG_CONFIG="$bin/pg_config" clean; fi
make -s -j2 PG_CONFIG="$bin/pg_config"
make -s PG_CONFIG="$bin/pg_config" install
echo "$bin" >"$stamp"
echo "$bin" >&3
