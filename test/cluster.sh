# Sourced by test/demo.sh and the benchmark scripts (bash, as root): installs
# autocdc unless AUTOCDC_SKIP_SETUP=1, starts a throwaway cluster as the
# postgres OS account in $work on a free $port with $BENCH_CONF and
# $BENCH_PGCONF appended to postgresql.conf, defines psql() and as_pg(), and
# removes the cluster at exit (unless BENCH_KEEP=1).  The PostgreSQL is the
# one setup.sh chose (the distribution's, or AUTOCDC_PG=MAJOR's); PG_BINDIR
# names another installation's bin directory.
if [ -n "${PG_BINDIR:-}" ]; then
	bin=$PG_BINDIR
elif [ "${AUTOCDC_SKIP_SETUP:-}" = 1 ]; then
	. "$(dirname "${BASH_SOURCE[0]}")/pgmajor.sh"
	bin=/usr/lib/postgresql/$(autocdc_pg_major)/bin
	[ -x "$bin/postgres" ] || bin=$(bash "$(dirname "${BASH_SOURCE[0]}")/pgbuild.sh" "$(autocdc_pg_major)")
else
	bin=$(bash "$(dirname "${BASH_SOURCE[0]}")/setup.sh")
fi

work=$(mktemp -d /tmp/autocdc-cluster.XXXXXX)
chmod 700 "$work"
chown postgres:postgres "$work"
cleanup() {
	if [ "${BENCH_KEEP:-}" = 1 ]; then
		echo "cluster left running: psql -h $work -p $port -U postgres"
		echo "stop it with: runuser -u postgres -- $bin/pg_ctl -D $work/data stop && rm -rf $work"
		return
	fi
	if [ -f "$work/data/postmaster.pid" ]; then
		runuser -u postgres -- "$bin/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
port=$((20000 + RANDOM % 30000))
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
trap cleanup EXIT
cd "$work"	# postgres may not be able to read the caller's directory

as_pg() { runuser -u postgres -- "$@"; }
as_pg "$bin/initdb" -D "$work/data" -U postgres -A trust -E UTF8 --locale=C >/dev/null
cat >>"$work/data/postgresql.conf" <<EOF
listen_addresses = ''
port = $port
unix_socket_directories = '$work'
shared_preload_libraries = 'autocdc'
wal_level = logical
${BENCH_CONF:-}
${BENCH_PGCONF:-}
EOF
if ! as_pg "$bin/pg_ctl" -D "$work/data" -l "$work/server.log" -w start >/dev/null; then
	cat "$work/server.log" >&2
	exit 1
fi
psql() { as_pg "$bin/psql" -X -q -h "$work" -p "$port" -U postgres -v ON_ERROR_STOP=1 "$@"; }

