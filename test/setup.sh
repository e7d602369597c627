#!/bin/bash
# Installs what autocdc needs on Debian 12 (as root), then builds and installs it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then echo "run as root" >&2; exit 1; fi
need=()
for p in postgresql-15 postgresql-server-dev-15 postgresql-client-15 libipc-run-perl make gcc; do
	dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ] || [ "${CI:-}" = true ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq postgresql-15 postgresql-server-dev-15 postgresql-client-15 libipc-run-perl make gcc >/dev/null
fi
export PATH=/usr/lib/postgresql/15/bin:$PATH
make -s PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
make -s PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config install
