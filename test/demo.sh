#!/bin/bash
# autocdc end to end: installs and builds (test/setup.sh), starts a throwaway
# PostgreSQL 15 cluster as the postgres OS account, runs test/demo.sql (the
# worked examples 1-7 of SPEC.md section 8: change and snapshot flows) and
# prints the resulting target tables.  The cluster is stopped and removed on
# exit.  Run as root on Debian 12:
#     bash test/demo.sh
# AUTOCDC_SKIP_SETUP=1 skips setup.sh (use the autocdc already installed).
# Exits non-zero when a target differs from the SPEC.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ "$(id -u)" -ne 0 ]; then echo "run as root" >&2; exit 1; fi
[ "${AUTOCDC_SKIP_SETUP:-}" = 1 ] || bash "$here/setup.sh"
bin=/usr/lib/postgresql/15/bin

work=$(mktemp -d /tmp/autocdc-demo.XXXXXX)
chmod 700 "$work"
chown postgres:postgres "$work"
cleanup() {
	if [ -f "$work/data/postmaster.pid" ]; then
		runuser -u postgres -- "$bin/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
cd "$work"	# postgres may not be able to read the caller's directory

# a port nobody listens on (the server itself only listens on its socket in $work)
port=$((20000 + RANDOM % 30000))
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done

as_pg() { runuser -u postgres -- "$@"; }
as_pg "$bin/initdb" -D "$work/data" -U postgres -A trust -E UTF8 --locale=C >/dev/null
cat >>"$work/data/postgresql.conf" <<EOF
shared_preload_libraries = 'autocdc'
wal_level = logical
listen_addresses = ''
port = $port
unix_socket_directories = '$work'
EOF
if ! as_pg "$bin/pg_ctl" -D "$work/data" -l "$work/server.log" -w start >/dev/null; then
	cat "$work/server.log" >&2
	exit 1
fi

echo "autocdc demo: PostgreSQL $("$bin/postgres" -V | awk '{print $3}'), throwaway cluster in $work (socket port $port)"
status=0
as_pg "$bin/psql" -X -q -h "$work" -p "$port" -U postgres -d postgres \
	-v ON_ERROR_STOP=1 -f - <"$here/demo.sql" || status=$?
if [ $status -ne 0 ]; then
	echo "demo FAILED (psql exit $status); server log tail:" >&2
	tail -30 "$work/server.log" >&2
fi
exit $status
