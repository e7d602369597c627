#!/bin/bash
# What the indexes of an SCD 2 target's periods (the ones autocdc.as_of
# reads) cost a run (not part of the test suite).  Run as root on Debian 12:
#     bash test/bench/index_bench.sh    # about 3 minutes
# (also run once per build, alternating, to compare builds: INDEX_LAYOUTS=split)
# In a throwaway cluster (test/cluster.sh, server.conf), applies bench.sh's
# 200k events to an SCD 2 target of 0 and of 10k rows with three layouts,
# each in a fresh database, alternating their order: "split" (create_as_of_index's:
# GiST over the ended versions, btree over the open ones' starts), "full"
# (one GiST over every row) and "none" (create_flow's); prints each run's time and its
# write phase (DEBUG2 timings), then the medians.
# Environment: INDEX_REPEAT (3); INDEX_LAYOUTS (default "split full none");
# INDEX_KEYS=shuffled to give the events' keys in no order (new keys then
# arrive in no order, as with random identifiers); INDEX_SCD=1 for an SCD 1
# flow (it has no such indexes: compare builds with it); PG_BINDIR,
# AUTOCDC_SKIP_SETUP=1.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ "$(id -u)" -ne 0 ]; then echo "run as root" >&2; exit 1; fi
REPEAT=${INDEX_REPEAT:-3}
LAYOUTS=${INDEX_LAYOUTS:-split full none}
SHUFFLE=$([ "${INDEX_KEYS:-}" = shuffled ] && echo true || echo false)
SCD=${INDEX_SCD:-2}
BENCH_CONF="$(cat "$here/server.conf")
autocdc.enabled = off
autovacuum = off"
. "$here/../cluster.sh"
cp "$here"/*.sql "$work/"
chown -R postgres:postgres "$work"
echo "index layouts of an SCD $SCD target: 200000 events, keys shuffled: $SHUFFLE; $REPEAT repetition(s); load $(cut -d' ' -f1-3 /proc/loadavg)"
results=$work/results
: >"$results"
for rep in $(seq 1 "$REPEAT"); do
	for P in 0 10000; do
		order=$LAYOUTS
		[ $((rep % 2)) = 1 ] || order=$(echo "$LAYOUTS" | tr ' ' '\n' | tac | tr '\n' ' ')
		for lay in $order; do
			psql -d postgres -c "DROP DATABASE IF EXISTS il" -c "CREATE DATABASE il"
			out=$(psql -At -d il -v lay="$lay" -v P="$P" -v shuffle="$SHUFFLE" -v scd="$SCD" -f "$work/index_layout.sql" 2>&1)
			wrote=$(echo "$out" | sed -n 's/.*wrote in \([0-9]*\) ms.*/\1/p' | tail -1)
			echo "$rep $P $lay $(echo "$out" | tail -1) ${wrote:-?}" | tee -a "$results"
		done
	done
done
echo
echo "medians (target rows before, layout: run s, write phase ms):"
for P in 0 10000; do
	for lay in $LAYOUTS; do
		secs=$(awk -v P="$P" -v L="$lay" '$2 == P && $3 == L {print $4}' "$results" | sort -n)
		wrote=$(awk -v P="$P" -v L="$lay" '$2 == P && $3 == L {print $5}' "$results" | sort -n)
		n=$(echo "$secs" | wc -l)
		m=$(((n + 1) / 2))
		printf "%7d %-5s %6s s %6s ms\n" "$P" "$lay" "$(echo "$secs" | sed -n ${m}p)" "$(echo "$wrote" | sed -n ${m}p)"
	done
done
