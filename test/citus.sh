#!/bin/bash
# Builds Citus from its source tarball into a copy of the PostgreSQL 18
# prefix of test/pgbuild.sh, so that test/t/175_citus.pl can run a
# coordinator and two workers (.ci/run).  Run as root on Debian 12; prints
# the copy's bin directory.
#   AUTOCDC_CITUS_TARBALL=file  Citus' source tarball (citus-14.0.1.tar.gz;
#                               .ci/run names the one its machine has)
#   AUTOCDC_PG_CACHE=dir        as for pgbuild.sh (the copy is dir/18-citus)
# The copy is rebuilt only when its stamp (PostgreSQL's stamp and the
# tarball's name) changes.  Exits 3 when the tarball is absent (nothing is
# built), or with pgbuild.sh's status when PostgreSQL 18 cannot be built.
# Neither Citus' source nor its binaries belong to the repository.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then echo "run as root" >&2; exit 1; fi
top="$(cd "$(dirname "$0")/.." && pwd)"
tarball=${AUTOCDC_CITUS_TARBALL:-}
if [ -z "$tarball" ] || [ ! -f "$tarball" ]; then
	echo "no Citus source at $tarball: Citus is not built (set AUTOCDC_CITUS_TARBALL)" >&2
	exit 3
fi
cache=${AUTOCDC_PG_CACHE:-/var/cache/autocdc-pg}
status=0
pgbin=$(bash "$top/test/pgbuild.sh" 18) || status=$?
if [ $status -ne 0 ]; then echo "PostgreSQL 18 is not built: Citus is not built" >&2; exit $status; fi
pgprefix=$(dirname "$pgbin")
prefix=$cache/18-citus
stamp="$(cat "$pgprefix/.autocdc-stamp") + $(basename "$tarball")"
if [ -x "$prefix/bin/pg_config" ] && [ -f "$("$prefix/bin/pg_config" --pkglibdir)/citus.so" ] &&
	[ "$(cat "$prefix/.autocdc-citus-stamp" 2>/dev/null)" = "$stamp" ]; then
	echo "$prefix/bin"
	exit 0
fi

# what Citus' configure needs beyond PostgreSQL's build (its optional
# libcurl, lz4 and zstd are left out)
export DEBIAN_FRONTEND=noninteractive
need=()
for p in make gcc libicu-dev; do
	dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 ||
		{ apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null; }
fi

echo "building Citus ($(basename "$tarball")) into $prefix" >&2
start=$SECONDS
rm -rf "$prefix"
cp -a "$pgprefix" "$prefix"
rm -f "$prefix/.autocdc-stamp"
src=$(mktemp -d /tmp/autocdc-citus.XXXXXX)
trap 'rm -rf "$src"' EXIT
tar -xzf "$tarball" -C "$src"
cd "$src"/citus-*/
# PostgreSQL's prefix is relocatable: the copy's pg_config names the copy
./configure -q PG_CONFIG="$prefix/bin/pg_config" --without-libcurl --without-lz4 --without-zstd \
	>build.log 2>&1 || { tail -30 build.log >&2; exit 1; }
{ make -s -j2 && make -s install; } >>build.log 2>&1 || { tail -50 build.log >&2; exit 1; }
chmod -R a+rX "$prefix"
echo "$stamp" >"$prefix/.autocdc-citus-stamp"
echo "built Citus in $((SECONDS - start))s" >&2
echo "$prefix/bin"
