#!/bin/bash
# Background worker benchmark (not part of the test suite).  Run as root on
# Debian 12:
#     bash test/bench/worker_bench.sh            # 60 s at 1,000 events/s per SCD type
#     bash test/bench/worker_bench.sh --quick    # 10 s
# For an SCD 1 and then an SCD 2 flow, each in a fresh database of a
# throwaway cluster (test/cluster.sh):
#   1. latency: pgbench inserts single-row transactions into the feed at a
#      steady rate (Poisson arrivals, 4 clients) while the worker applies
#      them; no run_flow.  Commit-to-visible latency of an event = commit
#      time of the worker transaction that made it visible in the target
#      minus the commit time of the feed insert (track_commit_timestamp; a
#      trigger on the target notes which transaction wrote which event).
#      Events superseded within one pass never become visible and are not
#      counted; deletes are not counted.
#   2. throughput: with the flow paused, pgbench inserts as fast as it can
#      for BENCH_BURST_SECS; then the flow is resumed and the time the worker
#      takes to drain the backlog gives the highest rate it sustains for
#      single-row source transactions.
# Environment: BENCH_RATE (1000), BENCH_SECS (60; --quick 10), BENCH_BURST_SECS
# (20; --quick 5), BENCH_KEYS (100000), BENCH_PGCONF, BENCH_KEEP=1,
# AUTOCDC_SKIP_SETUP=1 (see cluster.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ "$(id -u)" -ne 0 ]; then echo "run as root" >&2; exit 1; fi
if [ "${1:-}" = --quick ]; then
	: "${BENCH_SECS:=10}" "${BENCH_BURST_SECS:=5}"
elif [ $# -gt 0 ]; then
	echo "usage: $0 [--quick]" >&2; exit 2
fi
RATE=${BENCH_RATE:-1000}
SECS=${BENCH_SECS:-60}
BURST=${BENCH_BURST_SECS:-20}
KEYS=${BENCH_KEYS:-100000}

BENCH_CONF="track_commit_timestamp = on
shared_buffers = 512MB
max_wal_size = 4GB
checkpoint_timeout = 30min"
. "$here/../cluster.sh"

cat >"$work/insert.pgb" <<EOF
\\set id random(1, $KEYS)
\\set r random(1, 100)
INSERT INTO feed VALUES (:id, md5(:r::text), nextval('feed_seq'), CASE WHEN :r <= 10 THEN 'D' ELSE 'U' END);
EOF
chown -R postgres:postgres "$work"
pgbench() { as_pg "$bin/pgbench" -h "$work" -p "$port" -U postgres "$@"; }

# wait until the flow has applied every feed row (at most $1 seconds)
wait_caught_up() {
	local limit=$1 i=0
	until [ "$(psql -d wb -At -c "SELECT (SELECT num_events FROM autocdc.flows WHERE name = 'tgt') = (SELECT count(*) FROM feed)")" = t ]; do
		i=$((i + 1))
		if [ $i -gt $((limit * 20)) ]; then echo "the worker did not catch up within $limit s" >&2; exit 1; fi
		sleep 0.05
	done
}

echo "autocdc worker benchmark: $RATE events/s for $SECS s, then a $BURST s burst; $KEYS keys"
echo "machine: $(nproc) CPUs, $(free -g | awk '/^Mem:/ {print $2}') GB RAM; $("$bin/postgres" -V); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| flow | events/s offered | latency p50 | p90 | p99 | max | events measured | burst inserted/s | worker drains/s |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for scd in 1 2; do
	psql -d postgres -c "CREATE DATABASE wb"
	psql -d wb <<EOF
CREATE EXTENSION autocdc;
CREATE SEQUENCE feed_seq;
CREATE TABLE feed (id int, v text, seq bigint, op text);
SELECT autocdc.create_flow('tgt', 'feed', '{id}', 'seq', apply_as_deletes => \$\$op = 'D'\$\$,
	except_column_list => '{op}', stored_as_scd_type => '$scd') \\g /dev/null
-- which worker transaction made which event visible (flows run with
-- search_path = pg_catalog, pg_temp: the trigger names its table in full)
CREATE TABLE seen (seq bigint, x xid DEFAULT pg_current_xact_id()::xid);
CREATE FUNCTION note() RETURNS trigger LANGUAGE plpgsql AS
	\$\$BEGIN INSERT INTO public.seen (seq) VALUES (NEW.seq); RETURN NULL; END\$\$;
CREATE TRIGGER note AFTER INSERT ON tgt FOR EACH ROW EXECUTE FUNCTION note();
EOF
	# the worker creates the slot and makes the first read
	for i in $(seq 1 200); do
		[ "$(psql -d wb -At -c "SELECT last_run_at IS NOT NULL FROM autocdc.flows")" = t ] && break
		sleep 0.1
	done

	pgbench -n -c 4 -j 2 -R "$RATE" -T "$SECS" -f "$work/insert.pgb" wb >"$work/steady_$scd.log" 2>&1
	wait_caught_up 60
	lat=$(psql -d wb -At -F ' | ' -c "
		WITH f AS (SELECT seq, pg_xact_commit_timestamp(xmin) AS c FROM feed WHERE op = 'U'),
			 v AS (SELECT seq, min(pg_xact_commit_timestamp(x)) AS c FROM seen GROUP BY seq),
			 l AS (SELECT extract(epoch FROM v.c - f.c) * 1000 AS ms FROM f JOIN v USING (seq))
		SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1) || ' ms',
			   round(percentile_cont(0.9) WITHIN GROUP (ORDER BY ms)::numeric, 1) || ' ms',
			   round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 1) || ' ms',
			   round(max(ms)::numeric, 1) || ' ms', count(*)
		  FROM l")
	offered=$(psql -d wb -At -c "SELECT round(count(*) / $SECS.0) FROM feed")

	psql -d wb -c "SELECT autocdc.pause_flow('tgt')" >/dev/null
	before=$(psql -d wb -At -c "SELECT count(*) FROM feed")
	pgbench -n -c 4 -j 2 -T "$BURST" -f "$work/insert.pgb" wb >"$work/burst_$scd.log" 2>&1
	backlog=$(( $(psql -d wb -At -c "SELECT count(*) FROM feed") - before ))
	t0=$(date +%s.%N)
	psql -d wb -c "SELECT autocdc.resume_flow('tgt')" >/dev/null
	wait_caught_up 600
	t1=$(date +%s.%N)
	drain=$(echo "$backlog / ($t1 - $t0)" | bc)
	echo "| SCD $scd | $offered | $lat | $((backlog / BURST)) | $drain |"
	psql -d postgres -c "DROP DATABASE wb"
done
echo
if grep -qE 'PANIC|TRAP|terminated by signal' "$work/server.log"; then
	echo "server log shows a crash:" >&2
	grep -E 'PANIC|TRAP|terminated by signal' "$work/server.log" >&2
	exit 1
fi
