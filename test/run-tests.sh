#!/bin/bash
# Runs the whole autocdc test suite (pg_regress, then TAP) on throwaway
# clusters as the postgres OS account.  Run as root on Debian 12.
#   AUTOCDC_PROPERTY_STREAMS=N  property-test streams per SCD mode (default 50; 6 modes)
#   AUTOCDC_PROPERTY_SEED=N     property-test seed (default 42)
#   AUTOCDC_MEMORY_FULL=1       memory bounds at README's sizes (1M-4M rows, about twenty minutes)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bash "$here/test/setup.sh"
work=$(mktemp -d /tmp/autocdc-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -a "$here/." "$work/src"
chown -R postgres:postgres "$work"
chmod 755 "$work"
cd "$work/src"
status=0
runuser -u postgres -- env PATH=/usr/lib/postgresql/15/bin:$PATH \
	AUTOCDC_PROPERTY_STREAMS="${AUTOCDC_PROPERTY_STREAMS:-}" AUTOCDC_PROPERTY_SEED="${AUTOCDC_PROPERTY_SEED:-}" \
	make -s PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config installcheck \
	REGRESS_OPTS="--temp-instance=$work/inst --temp-config=./test/regress.conf" || status=$?
if [ $status -ne 0 ]; then
	[ -f regression.diffs ] && head -200 regression.diffs
	for f in tmp_check/log/*; do [ -f "$f" ] && { echo "== $f"; tail -50 "$f"; }; done
fi
exit $status
