# Sourced by test/setup.sh, test/cluster.sh and test/run-tests.sh: prints,
# with autocdc_pg_major, the PostgreSQL major version to use: AUTOCDC_PG when
# set, else the one this Debian ships as its PostgreSQL (15 on Debian 12,
# 17 on Debian 13, whatever the `postgresql` package depends on elsewhere).
autocdc_pg_major() {
	local codename="" dep
	if [ -n "${AUTOCDC_PG:-}" ]; then echo "$AUTOCDC_PG"; return; fi
	[ -r /etc/os-release ] && codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	case "$codename" in
	bookworm) echo 15; return ;;
	trixie) echo 17; return ;;
	esac
	dep=$(apt-cache depends postgresql 2>/dev/null | sed -n 's/^ *Depends: postgresql-\([0-9][0-9]*\)$/\1/p' | head -1)
	if [ -z "$dep" ]; then
		# an installed server, the newest
		dep=$(ls -d /usr/lib/postgresql/[0-9]*/bin/postgres 2>/dev/null | sed 's|.*/postgresql/\([0-9]*\)/.*|\1|' | sort -n | tail -1)
	fi
	echo "${dep:-15}"
}
