#!/bin/bash
# Snapshot-flow benchmark (not part of the test suite).  Run as root on Debian 12:
#     bash test/bench/snapshot_bench.sh            # 1M-row snapshot
#     bash test/bench/snapshot_bench.sh --quick    # smoke test: SNAP_ROWS=100000
# Installs and builds (test/setup.sh), starts a throwaway cluster as the
# postgres OS account, and on the same server, in the same run, keeps an SCD 2
# history of one source table two ways:
#   (a) autocdc: create_snapshot_flow(..., stored_as_scd_type => '2') and
#       SELECT * FROM autocdc.run_flow(...) once per snapshot;
#   (b) the SQL dbt-postgres runs for `dbt snapshot` with the check strategy
#       (check_cols = 'all', hard_deletes = 'invalidate'), written out as
#       dbt-postgres renders its snapshot macros, run with plain psql: CREATE TABLE AS on the
#       first run; later runs build the staging temp table (snapshot FULL
#       scan joined with every open row), then UPDATE + INSERT, in one
#       transaction.
# The first run loads SNAP_ROWS rows; each later round changes 1% of the rows,
# deletes 0.1% and inserts 0.1% new keys, then runs (a) and (b).  Both
# results are compared (current rows and number of versions) after every
# round.  Prints the times and the ratio autocdc / dbt.
# Environment:
#   SNAP_ROWS     rows of the snapshot (default 1000000; --quick 100000)
#   SNAP_ROUNDS   measured second runs (default 3; the median is reported)
#   BENCH_PGCONF  extra postgresql.conf lines
#   PG_BINDIR     PostgreSQL binaries (default /usr/lib/postgresql/15/bin)
#   AUTOCDC_SKIP_SETUP=1  use the autocdc already installed (skip setup.sh)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ "$(id -u)" -ne 0 ]; then echo "run as root" >&2; exit 1; fi
if [ "${1:-}" = --quick ]; then
	: "${SNAP_ROWS:=100000}"
elif [ $# -gt 0 ]; then
	echo "usage: $0 [--quick]" >&2; exit 2
fi
ROWS=${SNAP_ROWS:-1000000}
ROUNDS=${SNAP_ROUNDS:-3}

# a throwaway cluster as the postgres OS account: $work, $port, as_pg()
BENCH_CONF="$(cat "$here/server.conf")
autocdc.enabled = off	# the flow here is applied by run_flow() only"
. "$here/../cluster.sh"
psql() { as_pg "$bin/psql" -X -q -h "$work" -p "$port" -U postgres -d bench -v ON_ERROR_STOP=1 "$@"; }
now() { date +%s.%N; }
# seconds taken by one psql invocation
timed() { local t0 t1; t0=$(now); psql "$@" >/dev/null; t1=$(now); awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'; }

echo "autocdc snapshot benchmark: $ROWS-row snapshot, SCD 2; $ROUNDS rounds of 1% changed, 0.1% removed, 0.1% added"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews the times)"
echo "machine: $(nproc) CPUs, $(free -g | awk '/^Mem:/ {print $2}') GB RAM; $("$bin/postgres" -V)"
as_pg "$bin/psql" -X -q -h "$work" -p "$port" -U postgres -d postgres -c "CREATE DATABASE bench"

psql <<EOSQL
CREATE EXTENSION autocdc;
CREATE TABLE src (id bigint PRIMARY KEY, name text, city text, amount numeric(12,2), qty int, day date);
INSERT INTO src
SELECT g, 'name ' || g, 'city ' || (g % 1000), (g % 100000) / 100.0, g % 7, date '2020-01-01' + (g % 1500)::int
  FROM generate_series(1, $ROWS) g;
VACUUM ANALYZE src;
CREATE TABLE rounds (round int, method text, secs numeric);
EOSQL

# dbt: the first run of dbt snapshot (check strategy: updated_at is the snapshot clock)
dbt_first="
BEGIN;
create table snap as (
  select *,
         md5(coalesce(cast(id as varchar),'') || '|' || coalesce(cast(now()::timestamp without time zone as varchar),'')) as dbt_scd_id,
         now()::timestamp without time zone as dbt_updated_at,
         now()::timestamp without time zone as dbt_valid_from,
         coalesce(nullif(now()::timestamp without time zone, now()::timestamp without time zone), null) as dbt_valid_to
  from (select * from src) sbq
);
COMMIT;"

# dbt: a later run (staging table, then postgres__snapshot_merge_sql), check_cols = all
row_changed="(snapshotted_data.name != snapshot_query.name or (snapshotted_data.name is null) <> (snapshot_query.name is null))
   or (snapshotted_data.city != snapshot_query.city or (snapshotted_data.city is null) <> (snapshot_query.city is null))
   or (snapshotted_data.amount != snapshot_query.amount or (snapshotted_data.amount is null) <> (snapshot_query.amount is null))
   or (snapshotted_data.qty != snapshot_query.qty or (snapshotted_data.qty is null) <> (snapshot_query.qty is null))
   or (snapshotted_data.day != snapshot_query.day or (snapshotted_data.day is null) <> (snapshot_query.day is null))"
dbt_next="
BEGIN;
create temporary table \"snap__dbt_tmp\" as (
  with snapshot_query as (select * from src),
  snapshotted_data as (
    select *, id as dbt_unique_key from snap where dbt_valid_to is null),
  insertions_source_data as (
    select *, id as dbt_unique_key,
           now()::timestamp without time zone as dbt_updated_at,
           now()::timestamp without time zone as dbt_valid_from,
           coalesce(nullif(now()::timestamp without time zone, now()::timestamp without time zone), null) as dbt_valid_to,
           md5(coalesce(cast(id as varchar),'') || '|' || coalesce(cast(now()::timestamp without time zone as varchar),'')) as dbt_scd_id
    from snapshot_query),
  updates_source_data as (
    select *, id as dbt_unique_key,
           now()::timestamp without time zone as dbt_updated_at,
           now()::timestamp without time zone as dbt_valid_from,
           now()::timestamp without time zone as dbt_valid_to
    from snapshot_query),
  deletes_source_data as (
    select *, id as dbt_unique_key from snapshot_query),
  insertions as (
    select 'insert' as dbt_change_type, source_data.*
    from insertions_source_data as source_data
    left outer join snapshotted_data on snapshotted_data.dbt_unique_key = source_data.dbt_unique_key
    where snapshotted_data.dbt_unique_key is null
       or (snapshotted_data.dbt_unique_key is not null
           and ($(echo "$row_changed" | sed 's/snapshot_query\./source_data./g')))),
  updates as (
    select 'update' as dbt_change_type, source_data.*, snapshotted_data.dbt_scd_id
    from updates_source_data as source_data
    join snapshotted_data on snapshotted_data.dbt_unique_key = source_data.dbt_unique_key
    where ($(echo "$row_changed" | sed 's/snapshot_query\./source_data./g'))),
  deletes as (
    select 'delete' as dbt_change_type, source_data.*,
           now()::timestamp without time zone as dbt_valid_from,
           now()::timestamp without time zone as dbt_updated_at,
           now()::timestamp without time zone as dbt_valid_to,
           snapshotted_data.dbt_scd_id
    from snapshotted_data
    left join deletes_source_data as source_data on snapshotted_data.dbt_unique_key = source_data.dbt_unique_key
    where source_data.dbt_unique_key is null)
  select * from insertions
  union all
  select * from updates
  union all
  select * from deletes
);
update snap
   set dbt_valid_to = DBT_INTERNAL_SOURCE.dbt_valid_to
  from \"snap__dbt_tmp\" as DBT_INTERNAL_SOURCE
 where DBT_INTERNAL_SOURCE.dbt_scd_id::text = snap.dbt_scd_id::text
   and DBT_INTERNAL_SOURCE.dbt_change_type::text in ('update'::text, 'delete'::text)
   and snap.dbt_valid_to is null;
insert into snap (id, name, city, amount, qty, day, dbt_scd_id, dbt_updated_at, dbt_valid_from, dbt_valid_to)
select id, name, city, amount, qty, day, dbt_scd_id, dbt_updated_at, dbt_valid_from, dbt_valid_to
  from \"snap__dbt_tmp\" as DBT_INTERNAL_SOURCE
 where DBT_INTERNAL_SOURCE.dbt_change_type::text = 'insert'::text;
COMMIT;"

autocdc_first="SELECT autocdc.create_snapshot_flow('hist', 'src', '{id}', stored_as_scd_type => '2');
SELECT * FROM autocdc.run_flow('hist');"
autocdc_next="SELECT * FROM autocdc.run_flow('hist');"

# the same answer: current rows and number of versions
check() {
	psql -At -c "
SELECT CASE WHEN (SELECT count(*) FROM hist) = (SELECT count(*) FROM snap)
		 AND NOT EXISTS (SELECT id, name, city, amount, qty, day FROM hist WHERE __end_at IS NULL
						 EXCEPT SELECT id, name, city, amount, qty, day FROM snap WHERE dbt_valid_to IS NULL)
		 AND NOT EXISTS (SELECT id, name, city, amount, qty, day FROM snap WHERE dbt_valid_to IS NULL
						 EXCEPT SELECT id, name, city, amount, qty, day FROM hist WHERE __end_at IS NULL)
		 AND NOT EXISTS (SELECT id, name, city, amount, qty, day FROM hist WHERE __end_at IS NULL
						 EXCEPT SELECT id, name, city, amount, qty, day FROM src)
		 AND (SELECT count(*) FROM hist WHERE __end_at IS NULL) = (SELECT count(*) FROM src)
	   THEN 'same' ELSE 'DIFFERENT' END"
}

quiet() { psql -c "VACUUM ANALYZE src" -c "VACUUM ANALYZE snap" -c "VACUUM ANALYZE hist" -c "CHECKPOINT"; }

psql -c "CHECKPOINT"
t_a=$(timed -c "$autocdc_first")
t_d=$(timed -c "$dbt_first")
psql -c "INSERT INTO rounds VALUES (0, 'autocdc', $t_a), (0, 'dbt', $t_d)"
echo "first run ($ROWS rows): autocdc ${t_a} s, dbt ${t_d} s; results: $(check)"

for r in $(seq 1 "$ROUNDS"); do
	psql <<EOSQL
-- 1% changed, 0.1% removed, 0.1% added (different rows each round)
UPDATE src SET city = city || ' r$r', amount = amount + 1 WHERE id % 100 = $r;
DELETE FROM src WHERE id % 1000 = 550 + $r;
INSERT INTO src SELECT g, 'new ' || g, 'city n', 1, 1, date '2024-01-01'
  FROM generate_series($ROWS * (1 + $r) + 1, $ROWS * (1 + $r) + $ROWS / 1000) g;
EOSQL
	quiet
	t_a=$(timed -c "$autocdc_next")
	t_d=$(timed -c "$dbt_next")
	res=$(check)
	psql -c "INSERT INTO rounds VALUES ($r, 'autocdc', $t_a), ($r, 'dbt', $t_d)"
	echo "round $r: autocdc ${t_a} s, dbt ${t_d} s; results: $res"
	[ "$res" = same ] || { echo "autocdc and dbt disagree" >&2; exit 1; }
done

echo
psql -P footer=off -c "
SELECT CASE WHEN round = 0 THEN 'first run' ELSE 'later runs (median of ' || count(*) / 2 || ')' END AS run,
	   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY secs) FILTER (WHERE method = 'autocdc')::numeric, 2) AS autocdc_s,
	   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY secs) FILTER (WHERE method = 'dbt')::numeric, 2) AS dbt_s,
	   round((percentile_cont(0.5) WITHIN GROUP (ORDER BY secs) FILTER (WHERE method = 'autocdc')
			/ percentile_cont(0.5) WITHIN GROUP (ORDER BY secs) FILTER (WHERE method = 'dbt'))::numeric, 2) AS ratio
  FROM rounds GROUP BY round = 0 ORDER BY round = 0 DESC"
psql -P footer=off -c "SELECT (SELECT count(*) FROM hist) AS autocdc_versions, (SELECT count(*) FROM snap) AS dbt_versions,
	pg_size_pretty(pg_total_relation_size('hist')) AS autocdc_target,
	pg_size_pretty((SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c WHERE c.relnamespace = 'autocdc_state'::regnamespace AND c.relkind = 'r')) AS autocdc_hidden_state,
	pg_size_pretty(pg_total_relation_size('snap')) AS dbt_target"
if grep -qE 'PANIC|TRAP|terminated by signal' "$work/server.log"; then
	echo "server log shows a crash:" >&2
	exit 1
fi
