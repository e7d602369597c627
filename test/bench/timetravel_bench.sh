#!/bin/bash
# Bitemporal flows and autocdc.as_of, benchmarked (not part of the test suite).
# Run as root on Debian 12:
#     bash test/bench/timetravel_bench.sh           # full (about 10 minutes)
#     bash test/bench/timetravel_bench.sh --quick   # smoke run: a tenth of the sizes, once
# Starts a throwaway cluster (test/cluster.sh, the settings of server.conf)
# and measures:
#  1. the same 200k events over 20k keys (10 per key: business sequence
#     10*i plus a jitter, system sequence i, 5% deletes; 10% of them arrive
#     late, after 1-5 later events of their key) applied in 10 runs of
#     run_flow (one per arrival slot) by an SCD 2 flow and a bitemporal
#     flow as create_flow makes them, the same two with the indexes of the
#     periods that autocdc.create_as_of_index makes (GiST over the ended
#     versions, btree over the starts of the open ones: what they cost),
#     an SCD 2 flow with one GiST over every row instead (what earlier
#     builds made) and one with SP-GiST instead of GiST;
#     each in a database of its own, alternating which goes first; the SCD 2
#     target must equal the bitemporal target's current belief;
#  2. autocdc.as_of on SCD 2 targets of 1M rows (20k keys x 50 versions,
#     200k keys x 5, 1M keys x 1) at an early, a middle and a late business
#     time, beside the same predicate as a plain query (a sequential scan)
#     and beside the same lookup through SP-GiST instead of GiST
#     (build times and sizes of both); as_of_key for one key beside the
#     plain query of that key; a run of TT_EVENTS new events into the
#     1M-row target with the index and without it.  Results are compared.
# Environment: TT_EVENTS (200000), TT_KEYS (20000), TT_ROWS (1000000),
# TT_REPEAT (3), BENCH_PGCONF, PG_BINDIR, AUTOCDC_SKIP_SETUP=1, BENCH_KEEP=1.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ "$(id -u)" -ne 0 ]; then echo "run as root" >&2; exit 1; fi
if [ "${1:-}" = --quick ]; then
	: "${TT_EVENTS:=20000}" "${TT_KEYS:=2000}" "${TT_ROWS:=100000}" "${TT_REPEAT:=1}"
elif [ $# -gt 0 ]; then
	echo "usage: $0 [--quick]" >&2; exit 2
fi
EVENTS=${TT_EVENTS:-200000}
KEYS=${TT_KEYS:-20000}
ROWS=${TT_ROWS:-1000000}
REPEAT=${TT_REPEAT:-3}
PER_KEY=$((EVENTS / KEYS))

BENCH_CONF="$(cat "$here/server.conf")
autocdc.enabled = off	# run_flow only
autovacuum = off	# the script analyzes explicitly"
. "$here/../cluster.sh"

echo "timetravel benchmark: $EVENTS events over $KEYS keys; as_of on $ROWS-row targets; $REPEAT repetition(s)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews the times)"
echo "machine: $(nproc) CPUs, $(free -g | awk '/^Mem:/ {print $2}') GB RAM; $("$bin/postgres" -V)"
psql -d postgres -c "CREATE DATABASE tt"
psql -d tt -c "CREATE TABLE runs (rep int, method text, secs float8, check_md5 text);
	CREATE TABLE queries (shape text, what text, x text, secs float8, nrows bigint, ok boolean);"

# part 1: one method in a fresh database; prints secs and the md5 of the
# current rows
apply_method() {
	local m=$1 r=$2
	psql -d postgres -c "CREATE DATABASE tt_m"
	psql -d tt_m -v N="$EVENTS" -v K="$KEYS" -v P="$PER_KEY" -v m="$m" <<'SQL' >/dev/null
CREATE EXTENSION autocdc;
CREATE TABLE ev AS
SELECT k, i, 10 * i + (hashint4(k * 100 + i) & 7) AS bt, i AS st,
	   CASE WHEN abs(hashint4(k * 1000 + i)) % 20 = 0 THEN 'D' ELSE 'U' END AS op,
	   md5((k * 100 + i)::text) AS v,
	   least(i + CASE WHEN abs(hashint4(k * 7919 + i)) % 10 = 0
					  THEN 1 + abs(hashint4(k * 31 + i)) % 5 ELSE 0 END, :P) AS slot
  FROM generate_series(1, :K) k, generate_series(1, :P) i;
CREATE TABLE feed (k int, v text, bt int, st int, op text);
SELECT autocdc.create_flow('t', 'feed', '{k}', sequence_by => 'bt', apply_as_deletes => $$op = 'D'$$,
	except_column_list => '{bt,st,op}', continuous => false,
	stored_as_scd_type => CASE WHEN :'m' LIKE 'bitemporal%' THEN 'bitemporal' ELSE '2' END,
	system_sequence_by => CASE WHEN :'m' LIKE 'bitemporal%' THEN 'st' END);
-- the indexes of the periods create_as_of_index makes (GiST over the ended
-- ones, btree over the starts of the open ones: *_asof), or one GiST over
-- every row (scd2_fullgist, what earlier builds made), or theirs with
-- SP-GiST instead of GiST (scd2_spgist); none as create_flow makes it
SELECT autocdc.create_as_of_index('t') WHERE :'m' IN ('scd2_asof', 'bitemporal_asof', 'scd2_spgist');
SELECT format('DROP INDEX %s', indexrelid::regclass) FROM pg_index
 WHERE indrelid = 't'::regclass AND :'m' = 'scd2_spgist' AND pg_get_indexdef(indexrelid) ~ 'USING gist' \gexec
SELECT CASE :'m' WHEN 'scd2_spgist' THEN 'CREATE INDEX ON t USING spgist (int4range(__start_at, __end_at)) WHERE __end_at IS NOT NULL'
				 WHEN 'scd2_fullgist' THEN 'CREATE INDEX ON t USING gist (int4range(__start_at, __end_at))' END \gexec
CREATE FUNCTION timed_run() RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
	PERFORM * FROM autocdc.run_flow('t');
	RETURN extract(epoch FROM clock_timestamp() - t0);
END $$;
CREATE TABLE secs (s float8);
CHECKPOINT;
SQL
	for s in $(seq 1 "$PER_KEY"); do
		psql -d tt_m -c "INSERT INTO feed SELECT k, v, bt, st, op FROM ev WHERE slot = $s ORDER BY i, k"
		psql -d tt_m -c "INSERT INTO secs SELECT timed_run()"
	done
	psql -d tt_m -At -c "SELECT sum(s) FROM secs" >"$work/secs"
	psql -d tt_m -At -c "SELECT md5(string_agg(concat_ws('|', k, v, __start_at, __end_at), ',' ORDER BY k, __start_at))
		FROM t $(case $m in bitemporal*) echo 'WHERE __system_end_at IS NULL' ;; esac)" >"$work/md5"
	psql -d postgres -c "DROP DATABASE tt_m"
	psql -d tt -c "INSERT INTO runs VALUES ($r, '$m', $(cat "$work/secs"), '$(cat "$work/md5")')"
}

for r in $(seq 1 "$REPEAT"); do
	if [ $((r % 2)) = 1 ]; then order="scd2 bitemporal scd2_asof bitemporal_asof scd2_fullgist scd2_spgist"
	else order="scd2_spgist scd2_fullgist bitemporal_asof scd2_asof bitemporal scd2"; fi
	for m in $order; do apply_method "$m" "$r"; done
done

# part 2: as_of on SCD 2 targets of $ROWS rows
psql -d postgres -c "CREATE DATABASE tt_q"
psql -d tt_q -c "CREATE EXTENSION autocdc"
psql -d tt_q -c "CREATE FUNCTION timed(q text, OUT secs float8, OUT nrows bigint) LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz; s float8[] := '{}';
BEGIN
	FOR i IN 1 .. 5 LOOP
		t0 := clock_timestamp();
		EXECUTE 'SELECT count(*) FROM (' || q || ') sub' INTO nrows;
		s := s || extract(epoch FROM clock_timestamp() - t0)::float8;
	END LOOP;
	SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY v) INTO secs FROM unnest(s) v;
END \$\$"
for versions in 50 5 1; do
	keys=$((ROWS / versions))
	shape="${keys} keys x ${versions}"
	psql -d tt_q -v keys="$keys" -v versions="$versions" <<'SQL' >/dev/null
SELECT autocdc.drop_flow('q', true) FROM autocdc.flows WHERE name = 'q';
DROP TABLE IF EXISTS qfeed;
CREATE TABLE qfeed (k int, v text, seq int);
SELECT autocdc.create_flow('q', 'qfeed', '{k}', sequence_by => 'seq', stored_as_scd_type => '2',
	except_column_list => '{seq}', continuous => false);
INSERT INTO qfeed SELECT k, md5(k::text || s), s * 1000 + k % 997 FROM generate_series(1, :keys) k, generate_series(1, :versions) s;
SELECT num_events FROM autocdc.run_flow('q');
SELECT autocdc.create_as_of_index('q');
VACUUM ANALYZE q;
SQL
	maxseq=$((versions * 1000 + 997))
	for x in $((maxseq / 10)) $((maxseq / 2)) $((maxseq * 9 / 10)); do
		brute="SELECT * FROM q WHERE __start_at <= $x AND (__end_at IS NULL OR $x < __end_at)"
		out=$(psql -d tt_q -At -F ' ' <<SQL
SELECT 'plain', * FROM timed('$brute');
SELECT 'as_of', * FROM timed('SELECT * FROM autocdc.as_of(NULL::q, $x)');
SELECT 'same', NOT EXISTS (SELECT * FROM autocdc.as_of(NULL::q, $x) EXCEPT ALL $brute)
	AND NOT EXISTS ($brute EXCEPT ALL SELECT * FROM autocdc.as_of(NULL::q, $x));
SQL
)
		echo "$out" | while read -r what secs nrows; do
			case $what in
			plain) psql -d tt -c "INSERT INTO queries VALUES ('$shape', 'plain query', '$x', $secs, $nrows, NULL)" ;;
			as_of) psql -d tt -c "INSERT INTO queries VALUES ('$shape', 'as_of', '$x', $secs, $nrows, NULL)" ;;
			same) psql -d tt -c "UPDATE queries SET ok = '$secs' WHERE shape = '$shape' AND x = '$x' AND what = 'as_of'" ;;
			esac
		done
	done
	# one key: as_of_key beside the plain query of the key (through the primary key)
	x=$((maxseq / 2))
	out=$(psql -d tt_q -At -F ' ' <<SQL
SELECT 'plain', * FROM timed('SELECT * FROM q WHERE k = 42 AND __start_at <= $x AND (__end_at IS NULL OR $x < __end_at)');
SELECT 'as_of_key', * FROM timed('SELECT * FROM autocdc.as_of_key(NULL::q, 42, $x)');
SQL
)
	echo "$out" | while read -r what secs nrows; do
		psql -d tt -c "INSERT INTO queries VALUES ('$shape', '$what one key', '$x', $secs, $nrows, NULL)"
	done
	if [ "$versions" = 50 ]; then
		# the GiST index autocdc made, rebuilt to time it; then SP-GiST instead
		spg=$(psql -d tt_q -At -c "SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'q'::regclass
			AND pg_get_indexdef(indexrelid) ~ 'USING gist'")
		opn=$(psql -d tt_q -At -c "SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'q'::regclass
			AND pg_get_indexdef(indexrelid) ~ 'btree \(__start_at\) WHERE'")
		for am in gist spgist; do
			psql -d tt_q -c "DROP INDEX IF EXISTS $spg, q_gist"
			t0=$(date +%s.%N)
			psql -d tt_q -c "CREATE INDEX $([ $am = spgist ] && echo q_gist || echo "$spg") ON q USING $am (int4range(__start_at, __end_at)) WHERE __end_at IS NOT NULL"
			t1=$(date +%s.%N)
			size=$(psql -d tt_q -At -c "SELECT pg_relation_size('$([ $am = spgist ] && echo q_gist || echo "$spg")')")
			psql -d tt -c "INSERT INTO queries VALUES ('$shape', '$am build (s), size', '$(( size / 1048576 )) MB', $t1 - $t0, NULL, NULL)"
		done
		for x in $((maxseq / 10)) $((maxseq / 2)) $((maxseq * 9 / 10)); do
			out=$(psql -d tt_q -At -F ' ' -c "SELECT * FROM timed('SELECT * FROM q WHERE int4range(__start_at, __end_at) @> $x AND __end_at IS NOT NULL UNION ALL SELECT * FROM q WHERE __end_at IS NULL AND __start_at <= $x')")
			psql -d tt -c "INSERT INTO queries VALUES ('$shape', 'SP-GiST range query', '$x', ${out% *}, ${out#* }, NULL)"
		done
		psql -d tt_q -c "DROP INDEX q_gist"
		psql -d tt_q -c "CREATE INDEX $spg ON q USING gist (int4range(__start_at, __end_at)) WHERE __end_at IS NOT NULL"
		# what the index costs a run into this big target: $KEYS keys' worth of new versions
		# with the index, then as many again without it
		for idx in with without; do
			[ $idx = without ] && psql -d tt_q -c "DROP INDEX $spg, $opn"
			psql -d tt_q -c "INSERT INTO qfeed SELECT k, md5(k::text || s || '$idx'), 1000000 * (1 + ('$idx' = 'without')::int) + s * 1000 + k % 997
				FROM generate_series(1, $KEYS) k, generate_series(1, $PER_KEY) s; CHECKPOINT"
			t0=$(date +%s.%N)
			psql -d tt_q -c "SELECT num_events FROM autocdc.run_flow('q')" >/dev/null
			t1=$(date +%s.%N)
			psql -d tt -c "INSERT INTO queries VALUES ('$shape', 'run of $EVENTS events, $idx the index', '-', $t1 - $t0, NULL, NULL)"
		done
	fi
done

echo
echo "== part 1: $EVENTS events over $KEYS keys in $PER_KEY runs (total run_flow time; median of $REPEAT)"
psql -d tt -P footer=off <<'SQL'
WITH m AS (SELECT method, percentile_disc(0.5) WITHIN GROUP (ORDER BY secs) AS secs,
				  min(secs) AS lo, max(secs) AS hi FROM runs GROUP BY method),
	 r AS (SELECT a.method, min(a.secs / b.secs) AS lo, max(a.secs / b.secs) AS hi,
				  percentile_disc(0.5) WITHIN GROUP (ORDER BY a.secs / b.secs) AS ratio
			 FROM runs a JOIN runs b ON b.rep = a.rep AND b.method = 'scd2' GROUP BY a.method)
SELECT m.method, round(m.secs::numeric, 2) AS secs,
	   format('%sx (%s-%s)', round(r.ratio::numeric, 2), round(r.lo::numeric, 2), round(r.hi::numeric, 2)) AS vs_scd2
  FROM m JOIN r USING (method) ORDER BY m.secs;
SELECT CASE WHEN count(DISTINCT check_md5) = 1 THEN 'check: every SCD 2 target equals every bitemporal current belief'
			ELSE 'CHECK FAILED: the targets differ' END FROM runs;
SQL
echo "== part 2: as_of on SCD 2 targets of $ROWS rows (median of 5 per query, seconds)"
psql -d tt -P footer=off <<'SQL'
SELECT shape, what, x, round(secs::numeric, 4) AS secs, nrows,
	   CASE WHEN what = 'as_of' THEN format('%sx', round((secs / (SELECT p.secs FROM queries p
			WHERE p.shape = q.shape AND p.x = q.x AND p.what = 'plain query'))::numeric, 2)) END AS vs_plain,
	   ok AS same_rows
  FROM queries q ORDER BY shape DESC, x, what;
SELECT CASE WHEN bool_and(ok) THEN 'check: as_of returned the plain query''s rows every time'
			ELSE 'CHECK FAILED: as_of differs' END FROM queries WHERE what = 'as_of';
SQL
if grep -qE 'PANIC|TRAP|terminated by signal' "$work/server.log"; then
	echo "server log shows a crash:" >&2
	exit 1
fi
