#!/bin/bash
# autocdc benchmark of the kinds of target with Citus (not part of the test
# suite).  Run as root on Debian 12 (Citus' source tarball at hand):
#     bash test/bench/citus_bench.sh            # 200k events into empty targets, 3 times
#     bash test/bench/citus_bench.sh --quick    # BENCH_EVENTS=20000, once
# test/bench/bench.sh on a Citus coordinator with two workers on this
# machine (PostgreSQL 18 and Citus built by test/citus.sh, autocdc installed
# there): the same events (measure.sql, flow.sql) into an ordinary target,
# one partitioned by hash of the key (four partitions) and one Citus
# distributes by the key (create_flow's distributed_by: 32 shards, the
# hidden state co-located), SCD 1 and SCD 2, side by side in one run, each
# measurement in a fresh database; scale_report.sql reports the times, the
# ratios to the ordinary target of the same repetition, and checks that
# every kind leaves the same current rows.
# Environment: as for bench.sh; AUTOCDC_CITUS_TARBALL as for test/citus.sh;
# BENCH_PREPOP defaults to 0 (a distributed target of 1M rows loads for
# minutes on one machine).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin=$(bash "$here/../citus.sh")
# (built in a copy: the tree may hold objects of another PostgreSQL)
src=$(mktemp -d)
(cd "$here/../.." && git ls-files -co --exclude-standard | grep -v "\.o$" | tar -cf - -T -) | tar -xf - -C "$src"
make -s -C "$src" PG_CONFIG="$bin/pg_config" install >/dev/null
rm -rf "$src"
export PG_BINDIR=$bin BENCH_CITUS=1
export BENCH_PREPOP=${BENCH_PREPOP:-0}
export BENCH_METHODS="scd1 scd1p scd1d scd2 scd2p scd2d" BENCH_REPORT=scale_report.sql
exec bash "$here/bench.sh" "$@"
