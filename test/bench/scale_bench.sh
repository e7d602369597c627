#!/bin/bash
# autocdc benchmark of the kinds of target (not part of the test suite).
# Run as root on Debian 12:
#     bash test/bench/scale_bench.sh            # 200k events; targets of 0 and 1M rows; 3 times
#     bash test/bench/scale_bench.sh --quick    # BENCH_EVENTS=20000 BENCH_BIG=100000, once
# The same events as test/bench/bench.sh (measure.sql, flow.sql), into an
# ordinary target (create_flow's) and into a target partitioned by hash of
# the key (four partitions, the same indexes), SCD 1 and SCD 2, side by side
# in one cluster, each measurement in a fresh database; reports the time of
# each and the ratio partitioned / ordinary of the same repetition, and
# checks that both leave the same current rows.  (A Citus-distributed
# target is not measured: autocdc does not write one yet.)
# Environment: BENCH_EVENTS, BENCH_BIG, BENCH_PREPOP (default "0 $BENCH_BIG"),
# BENCH_REPEAT, BENCH_PGCONF, BENCH_KEEP, AUTOCDC_SKIP_SETUP, PG_BINDIR, as
# for bench.sh.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ "$(id -u)" -ne 0 ]; then echo "run as root" >&2; exit 1; fi
if [ "${1:-}" = --quick ]; then
	: "${BENCH_EVENTS:=20000}" "${BENCH_BIG:=100000}" "${BENCH_REPEAT:=1}"
elif [ $# -gt 0 ]; then
	echo "usage: $0 [--quick]" >&2; exit 2
fi
N=${BENCH_EVENTS:-200000}
BIG=${BENCH_BIG:-1000000}
PREPOP=${BENCH_PREPOP:-"0 $BIG"}
REPEAT=${BENCH_REPEAT:-3}

BENCH_CONF="$(cat "$here/server.conf")
autocdc.enabled = off	# the flows here are applied by run_flow() only
autovacuum = off	# the measurements vacuum and analyze explicitly"
. "$here/../cluster.sh"
cp "$here"/*.sql "$work/"
chown -R postgres:postgres "$work"

echo "autocdc benchmark of target kinds: $N events per batch; targets of ${PREPOP// /, } rows before the batch; $REPEAT repetition(s)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); machine: $(nproc) CPUs, $(free -g | awk '/^Mem:/ {print $2}') GB RAM; $("$bin/postgres" -V)"
psql -d postgres -c "CREATE DATABASE bench"
psql -d bench -f results.sql
start=$(date +%s)
i=0
for r in $(seq 1 "$REPEAT"); do
	for p in $PREPOP; do
		for m in scd1 scd1p scd2 scd2p; do
			i=$((i + 1))
			psql -d postgres -c "CREATE DATABASE bench_m"
			psql -d bench_m -f setup.sql
			psql -d bench_m -v N="$N" -v P="$p" -v G="$p" -v R="$r" -v method="$m" -v out="$work/result_$i.csv" -f measure.sql
			psql -d postgres -c "DROP DATABASE bench_m"
			psql -d bench -c "\\copy bench_results (prepop, gen, rep, n, method, secs, events, upserted, deleted, wal_written, wal_decoded, wal_confirmed, wal_loaded, check_result, result_md5) FROM '$work/result_$i.csv' CSV"
		done
	done
done
echo
echo "total benchmark time: $(( $(date +%s) - start )) s; load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
psql -d bench -f scale_report.sql
