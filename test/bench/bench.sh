#!/bin/bash
# autocdc benchmark (not part of the test suite).  Run as root on Debian 12:
#     bash test/bench/bench.sh            # full: 200k events; targets of 0, 10k, 1M rows,
#                                         # and 1M rows given the 10k case's events; 3 times
#     bash test/bench/bench.sh --quick    # smoke test: BENCH_EVENTS=20000 BENCH_BIG=100000, once
# Installs and builds (test/setup.sh), starts a throwaway cluster as the
# postgres OS account, and measures on the same server, for each target size:
#   (a) autocdc SCD 1: SELECT * FROM autocdc.run_flow(...) over a batch of
#       events loaded into the feed (capture from the WAL included),
#   (b) autocdc SCD 2: the same with a second feed and target,
#   (c) the SQL a user would write for SCD 1 instead: DISTINCT ON dedupe of a
#       staging table + MERGE into a target that keeps the sequence,
#   (d) the SQL a user would write for SCD 2 instead: versions from window
#       functions over the deduplicated staging table, one UPDATE closing
#       the open versions the batch supersedes, one INSERT (scd2sql.sql).
# Events: 50% inserts of new keys, 35% in-order updates and 10% deletes of
# existing keys, 5% late updates (lower sequence, arriving after a newer
# update of the same key).  Each measurement runs in a fresh database (one
# replication slot per database), pre-populated and caught up first; see the
# comments in flow.sql, merge.sql and scd2sql.sql.  Prints a markdown table for docs/benchmarks.md.
# Environment:
#   BENCH_EVENTS  events per batch (default 200000; --quick 20000)
#   BENCH_SMALL   rows of the small pre-populated target (default 10000)
#   BENCH_BIG     rows of the big pre-populated target (default 1000000; --quick 100000)
#   BENCH_PREPOP  space-separated target sizes to run (default "0 $BENCH_SMALL $BENCH_BIG
#                 $BENCH_BIG:$BENCH_SMALL"); P:G = a target of P rows given the events
#                 generated for G rows (new keys moved above P): the same work as the
#                 G-row case on a bigger target
#   BENCH_PGCONF  extra postgresql.conf lines
#   BENCH_REPEAT  repetitions of the whole set of measurements (default 3; --quick 1):
#                 the report shows the median of each and the range of the ratios
#   BENCH_KEEP=1  leave the cluster running (prints how to connect and stop it)
#   AUTOCDC_SKIP_SETUP=1  use the autocdc already installed (skip setup.sh)
#   BENCH_METHODS what to measure (default "merge scd1 scd2sql scd2": scd2sql is the
#                 hand-written SCD 2, SCD 2's baseline; flow.sql: scd1p, scd2p
#                 partitioned, scd1d, scd2d distributed with Citus)
#   BENCH_CITUS=1 a Citus coordinator and two workers (citus_bench.sh sets it)
#   BENCH_REPORT  the report's SQL file (default report.sql; scale_bench.sh sets them)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ "$(id -u)" -ne 0 ]; then echo "run as root" >&2; exit 1; fi
if [ "${1:-}" = --quick ]; then
	: "${BENCH_EVENTS:=20000}" "${BENCH_BIG:=100000}" "${BENCH_REPEAT:=1}"
elif [ $# -gt 0 ]; then
	echo "usage: $0 [--quick]" >&2; exit 2
fi
N=${BENCH_EVENTS:-200000}
SMALL=${BENCH_SMALL:-10000}
BIG=${BENCH_BIG:-1000000}
PREPOP=${BENCH_PREPOP:-"0 $SMALL $BIG $BIG:$SMALL"}
REPEAT=${BENCH_REPEAT:-3}

# a throwaway cluster as the postgres OS account: $work, $port, psql(), as_pg()
BENCH_CONF="$(cat "$here/server.conf")
autocdc.enabled = off	# the flows here are applied by run_flow() only
autovacuum = off	# the measurements vacuum and analyze explicitly; a worker waking mid-run skews it"
# BENCH_CITUS=1 (citus_bench.sh): the cluster is the coordinator of two Citus
# workers on localhost, each with these settings too
citus_conf="shared_preload_libraries = 'citus,autocdc'
listen_addresses = '127.0.0.1'
max_prepared_transactions = 20
citus.node_conninfo = 'sslmode=disable'
citus.enable_statistics_collection = off"
[ "${BENCH_CITUS:-}" != 1 ] || BENCH_CONF="$BENCH_CONF
$citus_conf"
. "$here/../cluster.sh"
workers=()
wpsql() { local p=$1; shift; as_pg "$bin/psql" -X -q -h "$work" -p "$p" -U postgres -v ON_ERROR_STOP=1 "$@"; }
if [ "${BENCH_CITUS:-}" = 1 ]; then
	wport=$port
	for w in 1 2; do
		wport=$((wport + 1))
		while (exec 3<>"/dev/tcp/127.0.0.1/$wport") 2>/dev/null; do wport=$((wport + 1)); done
		as_pg "$bin/initdb" -D "$work/worker$w" -U postgres -A trust -E UTF8 --locale=C >/dev/null
		printf '%s\n' "port = $wport" "unix_socket_directories = '$work'" 'wal_level = logical' "$BENCH_CONF" \
			"${BENCH_PGCONF:-}" >>"$work/worker$w/postgresql.conf"
		as_pg "$bin/pg_ctl" -D "$work/worker$w" -l "$work/worker$w.log" -w start >/dev/null
		workers+=("$wport")
	done
	trap 'for w in 1 2; do as_pg "$bin/pg_ctl" -D "$work/worker$w" -m fast -w stop >/dev/null 2>&1 || true; done; cleanup' EXIT
fi
# a fresh measurement database (with Citus: on every node, the workers added)
new_db() {
	psql -d postgres -c "CREATE DATABASE bench_m"
	[ "${BENCH_CITUS:-}" = 1 ] || return 0
	local wp
	for wp in "${workers[@]}"; do
		[ "$(wpsql "$wp" -d postgres -tAc "SELECT count(*) FROM pg_database WHERE datname = 'bench_m'")" = 1 ] ||
			wpsql "$wp" -d postgres -c "CREATE DATABASE bench_m"
		wpsql "$wp" -d bench_m -c "CREATE EXTENSION IF NOT EXISTS citus"
	done
	psql -d bench_m -c "CREATE EXTENSION citus" -c "SELECT citus_set_coordinator_host('127.0.0.1', $port)" >/dev/null
	for wp in "${workers[@]}"; do psql -d bench_m -c "SELECT citus_add_node('127.0.0.1', $wp)" >/dev/null; done
}
drop_db() {
	psql -d postgres -c "DROP DATABASE bench_m WITH (FORCE)"
	local wp
	for wp in "${workers[@]}"; do wpsql "$wp" -d postgres -c "DROP DATABASE IF EXISTS bench_m WITH (FORCE)"; done
}
cp "$here"/*.sql "$work/"
chown -R postgres:postgres "$work"

echo "autocdc benchmark: $N events per batch; targets of ${PREPOP// /, } rows before the batch (P:G = P rows, the events of G); $REPEAT repetition(s)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews the times)"
echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(free -g | awk '/^Mem:/ {print $2}') GB RAM; $("$bin/postgres" -V)"
psql -d postgres -c "CREATE DATABASE bench"
psql -d bench -P footer=off -c "
SELECT name, setting, unit FROM pg_settings
 WHERE name IN ('shared_buffers', 'max_wal_size', 'checkpoint_timeout', 'work_mem',
				'maintenance_work_mem', 'effective_cache_size', 'synchronous_commit', 'fsync',
				'wal_level', 'logical_decoding_work_mem', 'autovacuum', 'wal_compression',
				'data_checksums', 'shared_preload_libraries')
 ORDER BY name"
psql -d bench -f results.sql

# each measurement in a database of its own: one replication slot per
# database, so no measurement decodes the WAL of another
start=$(date +%s)
i=0
for r in $(seq 1 "$REPEAT"); do
for pg in $PREPOP; do
	p=${pg%%:*}
	g=${pg#*:}
	for m in ${BENCH_METHODS:-merge scd1 scd2sql scd2}; do
		i=$((i + 1))
		new_db
		psql -d bench_m -f setup.sql
		psql -d bench_m -v N="$N" -v P="$p" -v G="$g" -v R="$r" -v method="$m" -v out="$work/result_$i.csv" -f measure.sql
		drop_db
		psql -d bench -c "\\copy bench_results (prepop, gen, rep, n, method, secs, events, upserted, deleted, wal_written, wal_decoded, wal_confirmed, wal_loaded, check_result, result_md5) FROM '$work/result_$i.csv' CSV"
	done
done
done
echo
echo "total benchmark time: $(( $(date +%s) - start )) s; load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
psql -d bench -f "${BENCH_REPORT:-report.sql}"
if grep -qE 'PANIC|TRAP|terminated by signal' "$work/server.log"; then
	echo "server log shows a crash:" >&2
	grep -E 'PANIC|TRAP|terminated by signal' "$work/server.log" >&2
	exit 1
fi
