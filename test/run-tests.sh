#!/bin/bash
# Runs the whole autocdc test suite (pg_regress, then TAP) on throwaway
# clusters as the postgres OS account.  Run as root on Debian 12 or 13.
#   bash test/run-tests.sh [MAJOR]
#   MAJOR, or AUTOCDC_PG=MAJOR  the PostgreSQL version (default: the one the
#                               distribution ships, 15 on Debian 12, 17 on
#                               Debian 13): Debian's packages where the
#                               archive has them, else built by
#                               test/pgbuild.sh (test/setup.sh)
#   AUTOCDC_PG_BIN=dir          run on the PostgreSQL installation whose bin
#                               directory is dir (e.g. a private copy of one):
#                               autocdc is built and installed there
#   AUTOCDC_REGRESS="a b"       only these pg_regress files (sql/a.sql ...; "none": none)
#   AUTOCDC_TAP="test/t/x.pl"   only these TAP files ("none": no TAP file)
#   AUTOCDC_PROPERTY_STREAMS=N  property-test streams per SCD mode (default 50; 6 modes)
#   AUTOCDC_PROPERTY_SEED=N     property-test seed (default 42)
#   AUTOCDC_PROPERTY_CITUS=1    property tests on a Citus cluster, into distributed
#                               targets (an installation with Citus: .ci/run)
#   AUTOCDC_MEMORY_FULL=1       memory bounds at docs/operations.md's sizes (1M-4M rows, about twenty minutes)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
[ -z "${1:-}" ] || export AUTOCDC_PG=$1
if [ -n "${AUTOCDC_PG_BIN:-}" ]; then
	bin=$AUTOCDC_PG_BIN
	private=1
else
	bin=$(bash "$here/test/setup.sh")
fi
pg=$("$bin/pg_config" --version | sed 's/^PostgreSQL \([0-9]*\).*/\1/')
work=$(mktemp -d /tmp/autocdc-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -a "$here/." "$work/src"
if [ -n "${private:-}" ]; then
	# the checkout's objects may be another version's: build the copy
	make -s -C "$work/src" PG_CONFIG="$bin/pg_config" clean
	make -s -j2 -C "$work/src" PG_CONFIG="$bin/pg_config"
	make -s -C "$work/src" PG_CONFIG="$bin/pg_config" install
fi
chown -R postgres:postgres "$work"
chmod 755 "$work"
cd "$work/src"
echo "autocdc test suite on PostgreSQL $("$bin/postgres" -V | awk '{print $3}') ($bin)"
start=$SECONDS
status=0
subset=()
case "${AUTOCDC_REGRESS:-}" in
'') ;;
none) subset+=("REGRESS=") ;;
*) subset+=("REGRESS=$AUTOCDC_REGRESS") ;;
esac
case "${AUTOCDC_TAP:-}" in
'') ;;
none) subset+=("TAP_TESTS=") ;;
*) subset+=("PROVE_TESTS=$AUTOCDC_TAP") ;;
esac
runuser -u postgres -- env PATH="$bin:$PATH" \
	AUTOCDC_PROPERTY_STREAMS="${AUTOCDC_PROPERTY_STREAMS:-}" AUTOCDC_PROPERTY_SEED="${AUTOCDC_PROPERTY_SEED:-}" \
	AUTOCDC_PROPERTY_CITUS="${AUTOCDC_PROPERTY_CITUS:-}" \
	make -s PG_CONFIG="$bin/pg_config" installcheck "${subset[@]}" \
	REGRESS_OPTS="--temp-instance=$work/inst --temp-config=./test/regress.conf" || status=$?
if [ $status -ne 0 ]; then
	[ -f regression.diffs ] && head -200 regression.diffs
	# AUTOCDC_RESULTS=dir keeps pg_regress's results (to update expected/)
	[ -z "${AUTOCDC_RESULTS:-}" ] || [ ! -d results ] || cp -r results/. "$AUTOCDC_RESULTS/"
	for f in tmp_check/log/* log/postmaster.log; do [ -f "$f" ] && { echo "== $f"; tail -50 "$f"; }; done
fi
echo "autocdc test suite on PostgreSQL $pg: $([ $status -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
exit $status
