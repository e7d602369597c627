#!/bin/bash
# autocdc end to end: installs and builds (test/setup.sh), starts a throwaway
# cluster of the distribution's PostgreSQL (AUTOCDC_PG=MAJOR: another) as the
# postgres OS account, runs test/demo.sql (the worked examples 1-7 of docs/semantics.md §8: change and snapshot flows, then
# a continuous flow that the background worker applies while events arrive,
# and the history of an ordinary table through changes())
# and prints the events, the runs and the resulting target tables.  The
# cluster is stopped and removed on exit.  Run as root on Debian 12 or 13:
#     bash test/demo.sh
# AUTOCDC_SKIP_SETUP=1 skips setup.sh (use the autocdc already installed).
# Exits non-zero when a target differs from docs/semantics.md §8.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ "$(id -u)" -ne 0 ]; then echo "run as root" >&2; exit 1; fi
# a throwaway cluster as the postgres OS account: $work, $port, as_pg()
. "$here/cluster.sh"

echo "autocdc demo: PostgreSQL $("$bin/postgres" -V | awk '{print $3}'), throwaway cluster in $work (socket port $port)"
status=0
as_pg "$bin/psql" -X -q -h "$work" -p "$port" -U postgres -d postgres \
	-v ON_ERROR_STOP=1 -f - <"$here/demo.sql" || status=$?
if [ $status -ne 0 ]; then
	echo "demo FAILED (psql exit $status); server log tail:" >&2
	tail -30 "$work/server.log" >&2
fi
exit $status
