#!/bin/bash
# changes() benchmark (not part of the test suite).  Run as root on Debian 12:
#     bash test/bench/changes_bench.sh            # 1M-row table, 200k changes, 3 repetitions, 60 s pgbench
#     bash test/bench/changes_bench.sh --quick    # smoke test: 100k rows, 20k changes, once, 10 s pgbench
# Installs and builds (test/setup.sh), starts a throwaway cluster as the
# postgres OS account (test/cluster.sh: bench.sh's server.conf, autovacuum off,
# track_commit_timestamp on, autocdc.enabled off except where a part turns the
# worker on with ALTER SYSTEM) and measures flows over changes(tbl):
#   1. apply: a BENCH_ROWS-row table accounts(id int primary key, balance,
#      note, updated), then BENCH_CHANGES single-row changes (3/10 inserts of
#      new keys, 5/10 updates, 2/10 deletes; changes_setup.sql) in
#      transactions of BENCH_TX_SIZE, written while nothing applies them.
#      (a) autocdc: an SCD 1 changes(accounts) flow, created and caught up
#          (first read, then one more run_flow) before the writes, applied
#          afterwards by one SELECT * FROM autocdc.run_flow(...);
#      (b) PostgreSQL's logical replication into another database of the
#          same cluster holding the same freshly loaded rows: publication on
#          the table, its pgoutput slot created before the writes, the
#          subscription created disabled (create_slot, copy_data = false);
#          its time runs from ALTER SUBSCRIPTION ... ENABLE until its
#          replication origin has applied the last commit (polled every 10 ms).
#      Both targets must end equal to the table (md5 of the rows in key
#      order).  Fresh databases each repetition; the order of (a) and (b)
#      alternates (the second one to run also reads the first one's WAL).
#   2. write-path cost: the same writes (same transactions), timed, on a
#      fresh copy of the table (a) with no flow (no autocdc in the database),
#      (b) with a changes() SCD 2 flow present and caught up (worker off),
#      (c) with the periods extension's system versioning on the table
#      (apt-get installs postgresql-15-periods when the server lacks it),
#      (d) with the worker on and the SCD 2 flow continuous (on a 2-core
#      machine that mostly measures the worker competing for the CPU; the
#      time the worker needed after the writes ended to catch up, and a check
#      of the history's current rows, are reported too).  BENCH_WRITE_WORKER=0
#      leaves out (d).
#   3. keep-up: the worker applies a continuous changes() SCD 2 flow on
#      pgbench_accounts (pgbench -i -s BENCH_SCALE) while pgbench runs its
#      tpcb-like script at BENCH_RATE transactions/s (4 clients) for
#      BENCH_SECS, after warm-up runs (BENCH_WARMUP_SECS) reported
#      apart.  Commit-to-visible latency of each new version = commit
#      time of the worker transaction that first inserted it (an AFTER INSERT
#      trigger on the target notes its xid; autocdc closes a version by
#      deleting and re-inserting it, so a version can be inserted more than
#      once) minus its __start_at (the source's commit time).  After the
#      worker caught up, the history's current rows must equal
#      pgbench_accounts.
#   4. out-of-line values: three tables of BENCH_TOAST_ROWS rows, one with
#      short values, two with a 4 kB incompressible value out of line per row
#      (one under the default replica identity, one under FULL), each
#      updated BENCH_TOAST_CHANGES times in another column and applied by
#      one run_flow of its SCD 1 changes() flow: the row store's cost beside
#      no out-of-line values and beside FULL.
# Prints a markdown report (medians of the repetitions; ratios are the median
# of the per-repetition ratios, with their range).
# Environment:
#   BENCH_ROWS     rows of the table (default 1000000; --quick 100000)
#   BENCH_CHANGES  changes written (default 200000; --quick 20000)
#   BENCH_TX_SIZE  changes per transaction (default 100)
#   BENCH_REPEAT   repetitions of parts 1 and 2 (default 3; --quick 1)
#   BENCH_SECS     pgbench duration of part 3 (default 60; --quick 10)
#   BENCH_WARMUP_SECS  pgbench runs of part 3 before the measured one (default 10; --quick 5;
#                  0: none), repeated (at most 6) until one whole run was served by the
#                  main slot, reported apart: right after a first read the laggard worker
#                  has the flow, and the first passes of either lane decode the first
#                  read's WAL again (over 1 s each at scale 10)
#   BENCH_RATE     pgbench transactions/s of part 3 (default 1000)
#   BENCH_SCALE    pgbench scale of part 3 (default 10: 1M accounts, 10 branches; at scale 1
#                  every transaction waits for the previous one's commit on the one branch row)
#   BENCH_PARTS    parts to run (default "apply write toast keepup")
#   BENCH_TOAST_ROWS, BENCH_TOAST_CHANGES  rows and updates of part 4 (default 20000, 40000;
#                  --quick 2000, 4000)
#   BENCH_WRITE_WORKER=0  leave out variant (d) of part 2
#   BENCH_PGCONF   extra postgresql.conf lines
#   BENCH_KEEP=1   leave the cluster running (prints how to connect and stop it)
#   PG_BINDIR      PostgreSQL binaries (default /usr/lib/postgresql/15/bin)
#   AUTOCDC_SKIP_SETUP=1  use the autocdc already installed (skip setup.sh)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ "$(id -u)" -ne 0 ]; then echo "run as root" >&2; exit 1; fi
if [ "${1:-}" = --quick ]; then
	: "${BENCH_ROWS:=100000}" "${BENCH_CHANGES:=20000}" "${BENCH_TOAST_ROWS:=2000}" "${BENCH_TOAST_CHANGES:=4000}" "${BENCH_REPEAT:=1}" "${BENCH_SECS:=10}" "${BENCH_WARMUP_SECS:=5}"
elif [ $# -gt 0 ]; then
	echo "usage: $0 [--quick]" >&2; exit 2
fi
ROWS=${BENCH_ROWS:-1000000}
CHANGES=${BENCH_CHANGES:-200000}
PER_TX=${BENCH_TX_SIZE:-100}
REPEAT=${BENCH_REPEAT:-3}
SECS=${BENCH_SECS:-60}
WARMUP=${BENCH_WARMUP_SECS:-10}
RATE=${BENCH_RATE:-1000}
SCALE=${BENCH_SCALE:-10}
PARTS=${BENCH_PARTS:-apply write toast keepup}
TOAST_ROWS=${BENCH_TOAST_ROWS:-20000}
TOAST_CHANGES=${BENCH_TOAST_CHANGES:-40000}
WRITE_WORKER=${BENCH_WRITE_WORKER:-1}
if [ $((CHANGES % PER_TX)) -ne 0 ]; then echo "BENCH_CHANGES must be a multiple of BENCH_TX_SIZE" >&2; exit 2; fi
# the deletes take distinct keys divisible by 5 (changes_setup.sql)
if [ "$CHANGES" -gt "$ROWS" ] || [ $((ROWS % 5)) -ne 0 ] || [ $((ROWS / 5 % 7919)) -eq 0 ]; then
	echo "need BENCH_CHANGES <= BENCH_ROWS, BENCH_ROWS a multiple of 5 and BENCH_ROWS / 5 not of 7919" >&2; exit 2
fi
NTX=$((CHANGES / PER_TX))
part() { case " $PARTS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# a throwaway cluster as the postgres OS account: $work, $port, $bin, psql(), as_pg()
BENCH_CONF="$(cat "$here/server.conf")
autocdc.enabled = off	# parts 1 and 2 apply by run_flow only; 2(d) and 3 turn the worker on
autovacuum = off	# the measurements vacuum and analyze explicitly
track_commit_timestamp = on	# part 3's latencies, the worker's catch-up"
. "$here/../cluster.sh"
cp "$here"/changes_*.sql "$work/"
chown -R postgres:postgres "$work"
pgbench_bin=$bin/pgbench
[ -x "$pgbench_bin" ] || pgbench_bin=/usr/lib/postgresql/15/bin/pgbench
pgbench() { as_pg "$pgbench_bin" -h "$work" -p "$port" -U postgres "$@"; }
now() { date +%s.%N; }
q() { local db=$1; shift; psql -d "$db" -At "$@"; }

# the periods extension (part 2 c)
periods_available() { [ "$(q postgres -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'periods'")" = 1 ]; }
if part write && ! periods_available; then
	echo "installing postgresql-15-periods"
	DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql-15-periods >/dev/null
	if ! periods_available; then
		echo "the periods extension is installed for /usr/lib/postgresql/15 but not for $bin:" >&2
		echo "copy the files of 'dpkg -L postgresql-15-periods' into that installation" >&2
		exit 1
	fi
fi

worker() {	# on | off
	psql -d postgres -c "ALTER SYSTEM SET autocdc.enabled = $1" -c "SELECT pg_reload_conf()" >/dev/null
}
# wait (at most $3 s) until flow $2 of database $1 is caught up: the last
# decoding left it nothing pending and the source unchanged since; with $4 (an
# xid), also until it applied that transaction.  A flow error ends the script.
wait_caught_up() {
	local db=$1 flow=$2 limit=$3 xid=${4:-} i=0 cond err
	cond="last_run_at IS NOT NULL AND lag_time IS NULL AND lag_time_exact AND last_error IS NULL"
	[ -z "$xid" ] || cond="$cond AND (SELECT last_commit_at FROM autocdc.flow_state s WHERE s.name = f.name) >= pg_xact_commit_timestamp('$xid'::xid)"
	until [ "$(q "$db" -c "SELECT count(*) FROM autocdc.flows f WHERE name = '$flow' AND $cond")" = 1 ]; do
		err=$(q "$db" -c "SELECT concat_ws(' / ', last_error, last_error_detail, last_error_hint) FROM autocdc.flows WHERE name = '$flow' AND last_error IS NOT NULL")
		if [ -n "$err" ]; then echo "flow $flow in $db failed: $err" >&2; exit 1; fi
		i=$((i + 1))
		if [ $i -gt $((limit * 20)) ]; then
			echo "flow $flow in $db did not catch up within $limit s:" >&2
			q "$db" -c "SELECT * FROM autocdc.flows WHERE name = '$flow'" >&2
			exit 1
		fi
		sleep 0.05
	done
}
new_db() {	# a fresh database with the table
	psql -d postgres -c "CREATE DATABASE $1"
	psql -d "$1" -v rows="$ROWS" -f "$work/changes_setup.sql"
}
# the writes, timed in the session: prints secs|last_start|last_xid|nchanged
timed_writes() {
	q "$1" -F '|' <<EOF
SELECT clock_timestamp() AS t0 \\gset
CALL changes_writes($ROWS, $NTX, $PER_TX) \\gset
SELECT round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 3), :'last_start', :'last_xid', :nchanged
EOF
}
check_writes() {	# every statement changed one row
	if [ "$1" -ne "$CHANGES" ]; then echo "the writes changed $1 rows, not $CHANGES" >&2; exit 1; fi
}

echo "autocdc changes() benchmark: $ROWS-row table, $CHANGES changes in $NTX transactions of $PER_TX; $REPEAT repetition(s); parts: $PARTS"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews the times)"
echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(free -g | awk '/^Mem:/ {print $2}') GB RAM; $("$bin/postgres" -V)"
psql -d postgres -c "CREATE DATABASE results"
psql -d results <<'EOF'
CREATE TABLE apply_runs (rep int, method text, ord int, secs numeric, events bigint, same boolean);
CREATE TABLE write_runs (rep int, variant text, secs numeric, drain_secs numeric, same boolean);
CREATE TABLE toast_runs (rep int, variant text, secs numeric, events bigint, same boolean, state_kb bigint);
CREATE TABLE keepup (phase text, secs int, tps numeric, versions bigint, p50 numeric, p90 numeric,
	p99 numeric, max numeric, same boolean, drain_secs numeric, lane text);
EOF
start=$(date +%s)

# ---------------------------------------------------------------- 1. apply
if part apply; then
for r in $(seq 1 "$REPEAT"); do
	src=apply_src_$r dst=apply_dst_$r
	new_db "$src"
	new_db "$dst"
	psql -d "$src" <<EOF
CREATE EXTENSION autocdc;
SELECT autocdc.create_flow(target => 'accounts_copy', source => 'changes(accounts)', keys => '{id}',
	continuous => false) \\g /dev/null
SELECT * FROM autocdc.run_flow('accounts_copy') \\g /dev/null
SELECT * FROM autocdc.run_flow('accounts_copy') \\g /dev/null
CREATE PUBLICATION accounts_pub FOR TABLE accounts;
SELECT pg_create_logical_replication_slot('accounts_sub_$r', 'pgoutput') \\g /dev/null
VACUUM ANALYZE accounts;
VACUUM ANALYZE accounts_copy;
EOF
	psql -d "$dst" <<EOF
CREATE SUBSCRIPTION accounts_sub CONNECTION 'host=$work port=$port dbname=$src user=postgres'
	PUBLICATION accounts_pub
	WITH (create_slot = false, slot_name = 'accounts_sub_$r', copy_data = false, enabled = false);
VACUUM ANALYZE accounts;
EOF
	IFS='|' read -r wsecs last_start last_xid nchanged <<<"$(timed_writes "$src")"
	check_writes "$nchanged"
	echo "repetition $r: writes ${wsecs} s (last transaction $last_xid from $last_start)"
	if [ $((r % 2)) -eq 1 ]; then order="autocdc subscription"; else order="subscription autocdc"; fi
	ord=0
	for m in $order; do
		ord=$((ord + 1))
		psql -d postgres -c CHECKPOINT
		if [ "$m" = autocdc ]; then
			IFS='|' read -r secs events <<<"$(q "$src" -F '|' <<'EOF'
SELECT clock_timestamp() AS t0 \gset
SELECT num_events FROM autocdc.run_flow('accounts_copy') \gset
SELECT round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 3), :num_events
EOF
)"
		else
			events=
			secs=$(q "$dst" <<EOF
SELECT 'pg_' || oid AS origin FROM pg_subscription WHERE subname = 'accounts_sub' \\gset
SELECT clock_timestamp() AS t0 \\gset
ALTER SUBSCRIPTION accounts_sub ENABLE;
CALL changes_wait_origin(:'origin', '$last_start', 1200);
SELECT round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 3)
EOF
)
		fi
		echo "  $m: ${secs} s${events:+ ($events events)}"
		psql -d results -c "INSERT INTO apply_runs VALUES ($r, '$m', $ord, $secs, ${events:-NULL}, NULL)"
	done
	m_src=$(q "$src" -c "SELECT changes_md5('accounts')")
	m_copy=$(q "$src" -c "SELECT changes_md5('accounts_copy')")
	m_dst=$(q "$dst" -c "SELECT changes_md5('accounts')")
	echo "  md5: table $m_src, autocdc $m_copy, subscription $m_dst"
	psql -d results -c "UPDATE apply_runs SET same = CASE method WHEN 'autocdc' THEN '$m_copy' ELSE '$m_dst' END = '$m_src' WHERE rep = $r"
	psql -d "$dst" -c "SET client_min_messages = warning" -c "DROP SUBSCRIPTION accounts_sub"
	psql -d postgres -c "DROP DATABASE $dst" -c "DROP DATABASE $src"
done
fi

# ---------------------------------------------------------------- 2. write path
if part write; then
variants="none flow periods"
[ "$WRITE_WORKER" = 0 ] || variants="$variants worker"
for r in $(seq 1 "$REPEAT"); do
	for v in $variants; do
		db=write_${v}_$r
		new_db "$db"
		case $v in
		flow)
			psql -d "$db" <<'EOF'
CREATE EXTENSION autocdc;
SELECT autocdc.create_flow(target => 'accounts_hist', source => 'changes(accounts)', keys => '{id}',
	stored_as_scd_type => '2') \g /dev/null
SELECT * FROM autocdc.run_flow('accounts_hist') \g /dev/null
SELECT * FROM autocdc.run_flow('accounts_hist') \g /dev/null
EOF
			;;
		periods)
			psql -d "$db" <<'EOF'
SET client_min_messages = warning;
CREATE EXTENSION periods CASCADE;
SELECT periods.add_system_time_period('accounts', 'row_start', 'row_end') \g /dev/null
SELECT periods.add_system_versioning('accounts') \g /dev/null
EOF
			;;
		worker)
			psql -d "$db" <<'EOF'
CREATE EXTENSION autocdc;
SELECT autocdc.create_flow(target => 'accounts_hist', source => 'changes(accounts)', keys => '{id}',
	stored_as_scd_type => '2') \g /dev/null
EOF
			worker on
			wait_caught_up "$db" accounts_hist 600
			;;
		esac
		psql -d "$db" -c "VACUUM ANALYZE accounts" -c CHECKPOINT
		IFS='|' read -r secs last_start last_xid nchanged <<<"$(timed_writes "$db")"
		check_writes "$nchanged"
		drain=NULL same=NULL
		if [ "$v" = worker ]; then
			t_end=$(now)
			wait_caught_up "$db" accounts_hist 1200 "$last_xid"
			drain=$(awk -v a="$t_end" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
			same=$(q "$db" -c "SELECT changes_md5('accounts') = changes_md5('accounts_hist', '__end_at IS NULL')")
			worker off
		fi
		echo "repetition $r, $v: writes ${secs} s$([ "$v" != worker ] || echo "; caught up $drain s later; current rows equal: $same")"
		psql -d results -c "INSERT INTO write_runs VALUES ($r, '$v', $secs, $drain, $([ "$same" = NULL ] && echo NULL || echo "'$same'"))"
		psql -d postgres -c "DROP DATABASE $db"
	done
done
fi

# ---------------------------------------------------------------- 4. out-of-line values
# TOAST_ROWS rows whose body is a 4 kB value out of line, TOAST_CHANGES
# updates of another column (in transactions of PER_TX): each logs only a
# pointer to the unchanged body.  Three tables, the same rows and updates,
# one SCD 1 changes() flow each: short bodies (nothing out of line: the
# baseline), out-of-line bodies under the default replica identity (the row
# store fills them), and the same under REPLICA IDENTITY FULL (the WAL holds
# the old row).  Each flow's run applies its table's updates; the order of
# the runs rotates between repetitions.
if part toast; then
for r in $(seq 1 "$REPEAT"); do
	db=toast_$r
	psql -d postgres -c "CREATE DATABASE $db"
	psql -d "$db" -q <<EOF
CREATE EXTENSION autocdc;
-- 4096 characters of hex from md5: pglz finds nothing to compress
CREATE FUNCTION big(i int) RETURNS text LANGUAGE sql IMMUTABLE AS
	\$\$SELECT string_agg(md5(i::text || '/' || j), '') FROM generate_series(1, 128) j\$\$;
CREATE TABLE docs_short (id int PRIMARY KEY, n int NOT NULL, body text);
CREATE TABLE docs_store (LIKE docs_short INCLUDING ALL);
CREATE TABLE docs_full (LIKE docs_short INCLUDING ALL);
ALTER TABLE docs_full REPLICA IDENTITY FULL;
INSERT INTO docs_short SELECT g, 0, left(md5(g::text), 20) FROM generate_series(1, $TOAST_ROWS) g;
INSERT INTO docs_store SELECT g, 0, big(g) FROM generate_series(1, $TOAST_ROWS) g;
INSERT INTO docs_full SELECT * FROM docs_store;
SELECT autocdc.create_flow(target => 'copy_' || t, source => 'changes(docs_' || t || ')', keys => '{id}',
	continuous => false) FROM unnest('{short,store,full}'::text[]) t \g /dev/null
SELECT count(*) FROM (SELECT autocdc.run_flow('copy_' || t) FROM unnest('{short,store,full}'::text[]) t) r \g /dev/null
SELECT count(*) FROM (SELECT autocdc.run_flow('copy_' || t) FROM unnest('{short,store,full}'::text[]) t) r \g /dev/null
CREATE PROCEDURE toast_writes(t text) LANGUAGE plpgsql AS \$\$
BEGIN
	FOR i IN 1..$TOAST_CHANGES LOOP
		EXECUTE format('UPDATE %I SET n = n + 1 WHERE id = \$1', 'docs_' || t)
			USING 1 + (i::bigint * 7919) % $TOAST_ROWS;
		IF i % $PER_TX = 0 THEN COMMIT; END IF;
	END LOOP;
	COMMIT;
END \$\$;
CALL toast_writes('short');
CALL toast_writes('store');
CALL toast_writes('full');
VACUUM ANALYZE;
CHECKPOINT;
EOF
	case $((r % 3)) in
	1) order="short store full" ;;
	2) order="store full short" ;;
	0) order="full short store" ;;
	esac
	for t in $order; do
		IFS='|' read -r secs events same store_kb <<<"$(q "$db" -F '|' <<EOF
SELECT clock_timestamp() AS t0 \gset
SELECT num_events FROM autocdc.run_flow('copy_$t') \gset
SELECT round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 3), :num_events,
	   (SELECT md5(string_agg(concat_ws('|', id, n, md5(body)), ',' ORDER BY id)) FROM docs_$t)
	 = (SELECT md5(string_agg(concat_ws('|', id, n, md5(body)), ',' ORDER BY id)) FROM copy_$t),
	   (SELECT hidden_state_bytes / 1024 FROM autocdc.flows WHERE name = 'copy_$t')
EOF
)"
		echo "  toast repetition $r, $t: ${secs} s ($events events), copy equal: $same, hidden state $store_kb kB"
		psql -d results -c "INSERT INTO toast_runs VALUES ($r, '$t', $secs, $events, '$same', $store_kb)"
	done
	psql -d postgres -c "DROP DATABASE $db"
done
fi

# ---------------------------------------------------------------- 3. keep-up
if part keepup; then
	psql -d postgres -c "CREATE DATABASE keepup"
	pgbench -i -q -s "$SCALE" keepup >"$work/pgbench_init.log" 2>&1 || { cat "$work/pgbench_init.log" >&2; exit 1; }
	psql -d keepup <<'EOF'
CREATE EXTENSION autocdc;
SELECT autocdc.create_flow(target => 'accounts_hist', source => 'changes(pgbench_accounts)', keys => '{aid}',
	stored_as_scd_type => '2') \g /dev/null
EOF
	worker on
	wait_caught_up keepup accounts_hist 600	# the worker's first read
	# which worker transaction inserted which version (flows run with
	# search_path = pg_catalog, pg_temp: the trigger names its table in full)
	psql -d keepup <<'EOF'
CREATE TABLE seen (x xid DEFAULT pg_current_xact_id()::xid, aid int, start_at timestamptz);
CREATE FUNCTION note() RETURNS trigger LANGUAGE plpgsql AS
	$$BEGIN INSERT INTO public.seen (aid, start_at) VALUES (NEW.aid, NEW.__start_at); RETURN NULL; END$$;
CREATE TRIGGER note AFTER INSERT ON accounts_hist FOR EACH ROW EXECUTE FUNCTION note();
VACUUM ANALYZE pgbench_accounts;
CHECKPOINT;
EOF
	# versions that start before this are the first read's
	t_warm=$(q keepup -c "SELECT clock_timestamp()")
	# warm-up: pgbench in runs of BENCH_WARMUP_SECS until one whole run was
	# served by the main slot (after the first read the laggard worker has
	# the flow; the first passes of each lane decode the first read's WAL)
	warm_secs=0 warm_tx=0
	if [ "$WARMUP" -gt 0 ]; then
		for i in 1 2 3 4 5 6; do
			lane_before=$(q keepup -c "SELECT lane FROM autocdc.flows WHERE name = 'accounts_hist'")
			echo "keep-up: warm-up $i, pgbench tpcb-like, scale $SCALE, $RATE tps offered for $WARMUP s (lane: $lane_before)"
			pgbench -n -c 4 -j 2 -R "$RATE" -T "$WARMUP" keepup >"$work/pgbench_warmup.log" 2>&1 || { cat "$work/pgbench_warmup.log" >&2; exit 1; }
			warm_secs=$((warm_secs + WARMUP))
			warm_tx=$((warm_tx + $(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$work/pgbench_warmup.log")))
			[ "$lane_before" != main ] || break
		done
	fi
	warm_tps=$([ "$warm_secs" -gt 0 ] && echo "scale=1; $warm_tx / $warm_secs" | bc || true)
	t_run=$(q keepup -c "SELECT clock_timestamp()")
	echo "keep-up: pgbench tpcb-like, scale $SCALE, $RATE tps offered for $SECS s"
	pgbench -n -c 4 -j 2 -R "$RATE" -T "$SECS" keepup >"$work/pgbench_run.log" 2>&1 || { cat "$work/pgbench_run.log" >&2; exit 1; }
	t_end=$(now)
	tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$work/pgbench_run.log" | head -1)
	# each tpcb-like transaction inserts one pgbench_history row: the last one's xid
	last_xid=$(q keepup -c "SELECT xmin FROM pgbench_history ORDER BY pg_xact_commit_timestamp(xmin) DESC LIMIT 1")
	wait_caught_up keepup accounts_hist 600 "$last_xid"
	drain=$(awk -v a="$t_end" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
	lane=$(q keepup -c "SELECT lane FROM autocdc.flows WHERE name = 'accounts_hist'")
	same=$(q keepup -c "
SELECT (SELECT md5(string_agg(concat_ws('|', aid, bid, abalance, filler), E'\n' ORDER BY aid)) FROM pgbench_accounts)
	 = (SELECT md5(string_agg(concat_ws('|', aid, bid, abalance, filler), E'\n' ORDER BY aid)) FROM accounts_hist WHERE __end_at IS NULL)")
	# a version is visible from the first worker transaction that inserted it
	# (closing a version deletes and re-inserts it); by the start of the
	# version: the warm-up, then the measured run
	q keepup -F ',' -o "$work/keepup.csv" -c "
WITH v AS (SELECT aid, start_at, min(pg_xact_commit_timestamp(x)) AS visible FROM seen
			WHERE start_at > '$t_warm' GROUP BY aid, start_at),
	 l AS (SELECT start_at >= '$t_run' AS measured, extract(epoch FROM visible - start_at) * 1000 AS ms FROM v)
SELECT CASE WHEN measured THEN 'run' ELSE 'warm-up' END, CASE WHEN measured THEN $SECS ELSE $warm_secs END,
	   CASE WHEN measured THEN ${tps:-NULL} ELSE ${warm_tps:-NULL} END, count(*),
	   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1),
	   round(percentile_cont(0.9) WITHIN GROUP (ORDER BY ms)::numeric, 1),
	   round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 1), round(max(ms)::numeric, 1),
	   CASE WHEN measured THEN '$same' END::boolean, CASE WHEN measured THEN $drain END,
	   CASE WHEN measured THEN '$lane' END
  FROM l GROUP BY measured ORDER BY measured"
	worker off
	psql -d results -c "\\copy keepup (phase, secs, tps, versions, p50, p90, p99, max, same, drain_secs, lane) FROM '$work/keepup.csv' CSV"
	while IFS=, read -r ph sc tp n p50 p90 p99 mx rest; do
		echo "  $ph: pgbench ${tp:-?} tps for $sc s; $n versions; latency p50 $p50 ms, p90 $p90, p99 $p99, max $mx"
	done <"$work/keepup.csv"
	echo "  current rows equal pgbench_accounts: $same; caught up ${drain} s after pgbench ended (lane: $lane)"
fi

echo
echo "total benchmark time: $(( $(date +%s) - start )) s; load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
psql -d results -v rows="$ROWS" -v changes="$CHANGES" -v ntx="$NTX" -v per_tx="$PER_TX" -v scale="$SCALE" -v rate="$RATE" \
	-v toast_rows="$TOAST_ROWS" -v toast_changes="$TOAST_CHANGES" \
	-f "$work/changes_report.sql"
if grep -qE 'PANIC|TRAP|terminated by signal' "$work/server.log"; then
	echo "server log shows a crash:" >&2
	grep -E 'PANIC|TRAP|terminated by signal' "$work/server.log" >&2
	exit 1
fi
if grep -qE 'ERROR|WARNING' "$work/server.log"; then
	echo
	echo "server log ERROR/WARNING lines:"
	grep -E 'ERROR|WARNING' "$work/server.log" | sort | uniq -c | sort -rn | head -20
fi
