#!/bin/bash
# autocdc benchmark of the kinds of target (not part of the test suite).
# Run as root on Debian 12:
#     bash test/bench/scale_bench.sh            # 200k events; targets of 0 and 1M rows; 3 times
#     bash test/bench/scale_bench.sh --quick    # BENCH_EVENTS=20000 BENCH_BIG=100000, once
# test/bench/bench.sh with other methods and report: the same events
# (measure.sql, flow.sql) into an ordinary target (create_flow's) and into a
# target partitioned by hash of the key (four partitions, the same indexes),
# SCD 1 and SCD 2, side by side in one cluster, each measurement in a fresh
# database; scale_report.sql reports the time of each and the ratio
# partitioned / ordinary of the same repetition, checks that both leave the
# same current rows, and compares their first loads.  (Citus-distributed
# targets: citus_bench.sh.)
# Environment: as for bench.sh; BENCH_PREPOP defaults to "0 $BENCH_BIG".
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
[ "${1:-}" != --quick ] || : "${BENCH_BIG:=100000}"
export BENCH_PREPOP=${BENCH_PREPOP:-"0 ${BENCH_BIG:-1000000}"}
export BENCH_METHODS="scd1 scd1p scd2 scd2p" BENCH_REPORT=scale_report.sql
exec bash "$here/bench.sh" "$@"
