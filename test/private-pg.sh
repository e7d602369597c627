#!/bin/bash
# Copies a PostgreSQL installation (its bin, lib and share directories) into
# a private directory and prints the copy's bin directory, so that autocdc
# can be built, installed and tested there while the original is in use:
#   AUTOCDC_PG_BIN=$(bash test/private-pg.sh /opt/mine) bash test/run-tests.sh
# PostgreSQL finds its lib and share directories relative to its binaries,
# so the copy runs on its own.  Run as root; the source installation is the
# one whose pg_config is given as $2 (default: Debian's PostgreSQL 15).
set -euo pipefail
dest=${1:?usage: $0 DIR [PG_CONFIG]}
pgc=${2:-/usr/lib/postgresql/15/bin/pg_config}
for k in bindir pkglibdir sharedir includedir-server; do
	d=$("$pgc" --$k)
	[ "$k" != includedir-server ] || d=$(dirname "$d")
	mkdir -p "$dest$d"
	cp -a "$d/." "$dest$d/"
done
rm -rf "$dest$("$pgc" --pkglibdir)/bitcode"
chmod -R a+rX "$dest"
echo "$dest$("$pgc" --bindir)"
