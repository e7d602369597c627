#!/bin/bash
# Runs a command as root inside a fresh Debian root of SUITE (bookworm,
# trixie, sid), with a copy of this checkout in /autocdc as the working
# directory, as a new user of that Debian would:
#     bash test/inroot.sh [options] SUITE CMD [ARG...]
#     bash test/inroot.sh trixie bash test/demo.sh
# The root is made by debootstrap (minbase) once and kept as a tarball under
# $AUTOCDC_ROOTS (default /var/cache/autocdc-roots), keyed by the suite, the
# packages baked in and the day it was made; each run unpacks it afresh and
# removes it afterwards.  A tarball older than AUTOCDC_ROOT_MAX_DAYS
# (default 14) is made again.  Options:
#   --pkgs "P..."        packages baked into the cached root (apt-get install)
#   --experimental       with sid: experimental's entry is added too, and
#                        --pkgs are installed from it (-t experimental)
#   --copy-in SRC:DEST   copy SRC (a file or directory) into the root at DEST
#   --copy-out SRC:DEST  after CMD, copy the root's SRC out to DEST
# Services never start inside the root (policy-rc.d), processes left in it
# are ended, and its mounts (/proc, and a /dev of its own with /dev/pts and
# /dev/shm) are undone on exit.  apt ignores the Valid-Until of stale release files of the archive.
# Exits with CMD's status, or 3 when the root or its packages cannot be had.
# the whole script is read before it runs (a checkout edited meanwhile changes nothing)
main() {
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then echo "run as root" >&2; exit 1; fi
here="$(cd "$(dirname "$0")/.." && pwd)"
pkgs=""
experimental=""
copy_in=()
copy_out=()
while [ $# -gt 0 ]; do
	case "$1" in
	--pkgs) pkgs=$2; shift 2 ;;
	--experimental) experimental=1; shift ;;
	--copy-in) copy_in+=("$2"); shift 2 ;;
	--copy-out) copy_out+=("$2"); shift 2 ;;
	*) break ;;
	esac
done
suite=${1:?usage: $0 [--pkgs "P..."] [--experimental] SUITE CMD [ARG...]}
shift
[ $# -gt 0 ] || { echo "usage: $0 SUITE CMD [ARG...]" >&2; exit 2; }
case "$suite" in bookworm | trixie | sid) ;; *) echo "unknown suite $suite" >&2; exit 2 ;; esac
cache=${AUTOCDC_ROOTS:-/var/cache/autocdc-roots}
mkdir -p "$cache"
export DEBIAN_FRONTEND=noninteractive
# the host's Debian mirror (deb.debian.org when none is configured)
mirror=$({ grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list || true; } |
	sed -n 's|^deb \(\[[^]]*\] \)\?\(http[^ ]*/debian\)/\? .*|\2|p' | head -1)
[ -n "$mirror" ] || mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
	sed -n 's|^URIs: *\(http[^ ]*/debian\)/\?$|\1|p' | head -1)
mirror=${mirror:-http://deb.debian.org/debian}
command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null

root=""
mounted=()
# unmounts what was mounted, ends what still runs in the root, removes it
cleanup() {
	local p i
	[ -n "$root" ] || return 0
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null
	done
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount "${mounted[$i]}" 2>/dev/null || umount -l "${mounted[$i]}" 2>/dev/null || true
	done
	remove_root
}
# removes the root, unless something is still mounted in it
remove_root() {
	if grep -q " $root/" /proc/mounts; then
		echo "left $root: something is still mounted in it" >&2
	else
		rm -rf "$root"
	fi
	root=""
}
trap cleanup EXIT
trap 'exit 130' INT TERM
enter() {
	# dpkg need not sync a throwaway root
	echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/autocdc-unsafe-io"
	mount -t proc proc "$root/proc" && mounted+=("$root/proc")
	# a /dev of the root's own (not the host's, which a removal inside the
	# root would reach): the usual nodes, its own pseudo-terminals and
	# shared memory
	mkdir -p "$root/dev"
	mount -t tmpfs -o mode=755,size=64m autocdc-dev "$root/dev" && mounted+=("$root/dev")
	local n
	for n in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
		mknod -m 666 "$root/dev/${n%%:*}" c "$(echo "$n" | cut -d: -f2)" "${n##*:}"
	done
	ln -s /proc/self/fd "$root/dev/fd"
	for n in 0:stdin 1:stdout 2:stderr; do ln -s "/proc/self/fd/${n%%:*}" "$root/dev/${n#*:}"; done
	mkdir -p "$root/dev/pts" "$root/dev/shm"
	mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$root/dev/pts" && mounted+=("$root/dev/pts")
	ln -s pts/ptmx "$root/dev/ptmx"
	mount -t tmpfs -o mode=1777 autocdc-shm "$root/dev/shm" && mounted+=("$root/dev/shm")
	cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
}
leave() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[$i]}" || umount -l "${mounted[$i]}"; done
	mounted=()
}

# sets $tarball to the bare root of the suite, made by debootstrap
base_tar() {
	local t
	t=$(find "$cache" -maxdepth 1 -name "$suite-base-*.tar.zst" -mtime -"${AUTOCDC_ROOT_MAX_DAYS:-14}" | sort | tail -1)
	if [ -n "$t" ]; then tarball=$t; return; fi
	t=$cache/$suite-base-$(date +%Y%m%d).tar.zst
	echo "making the $suite root ($mirror)" >&2
	command -v zstd >/dev/null || apt-get install -y -qq zstd >/dev/null
	root=$(mktemp -d /var/tmp/autocdc-root.XXXXXX)
	chmod 755 "$root"
	debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.log" 2>&1 ||
		{ tail -20 "$root.log" >&2; exit 3; }
	rm -f "$root.log"
	# the archive's own words: no services in a root; stale release files
	printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
	echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99autocdc-valid-until"
	rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*_Packages
	tar -C "$root" --zstd -cf "$t.tmp" . && mv "$t.tmp" "$t"
	remove_root
	tarball=$t
	# the suite's older roots, and the roots made from them, are not used again
	find "$cache" -maxdepth 1 -name "$suite-*.tar.zst" ! -newer "$t" ! -name "${t##*/}" -delete
}

# sets $tarball to the root with $pkgs installed (the bare one when none)
pkgs_tar() {
	local base t key
	base_tar
	base=$tarball
	[ -n "$pkgs" ] || return 0
	key=$(echo "$pkgs $experimental" | tr ' ' '\n' | sort -u | tr '\n' ' ' | md5sum | cut -c1-8)
	t=$(find "$cache" -maxdepth 1 -name "$suite-$key-*.tar.zst" -newer "$base" | sort | tail -1)
	if [ -n "$t" ]; then tarball=$t; return; fi
	t=$cache/$suite-$key-$(date +%Y%m%d).tar.zst
	echo "installing in the $suite root: $pkgs" >&2
	root=$(mktemp -d /var/tmp/autocdc-root.XXXXXX)
	tar -C "$root" --zstd -xf "$base"
	chmod 755 "$root"
	enter
	local target=()
	if [ -n "$experimental" ]; then
		echo "deb $mirror experimental main" >"$root/etc/apt/sources.list.d/experimental.list"
		target=(-t experimental)
	fi
	if ! chroot "$root" sh -c "apt-get update -qq && apt-get install -y -qq perl >/dev/null &&
		apt-get install -y -qq --no-install-recommends ${target[*]} $pkgs >/dev/null && apt-get clean" >&2; then
		echo "cannot install $pkgs in the $suite root" >&2
		exit 3
	fi
	leave
	tar -C "$root" --zstd -cf "$t.tmp" . && mv "$t.tmp" "$t"
	remove_root
	tarball=$t
}

tarball=""
pkgs_tar
root=$(mktemp -d /var/tmp/autocdc-root.XXXXXX)
tar -C "$root" --zstd -xf "$tarball"
chmod 755 "$root"
# a stable release's updates and security suites, as Debian's installer
# sets them up (debootstrap adds only the release itself)
if [ "$suite" != sid ] && [ ! -f "$root/etc/apt/sources.list.d/autocdc-updates.list" ]; then
	printf 'deb %s %s-updates main\ndeb %s-security %s-security main\n' \
		"$mirror" "$suite" "$mirror" "$suite" >"$root/etc/apt/sources.list.d/autocdc-updates.list"
fi
# this checkout, without git's files and build products
mkdir -p "$root/autocdc"
tar -C "$here" --exclude=.git --exclude-vcs-ignores -cf - . | tar -C "$root/autocdc" -xf -
for c in ${copy_in[@]+"${copy_in[@]}"}; do
	mkdir -p "$root$(dirname "${c#*:}")"
	cp -a "${c%%:*}" "$root${c#*:}"
done
enter
status=0
# a clean environment, but for CI and autocdc's own variables
mapfile -t pass < <(env | grep -E '^(CI|AUTOCDC_[A-Z_]+)=' | grep -v '^AUTOCDC_ROOT' || true)
chroot "$root" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	LANG=C.UTF-8 ${pass[@]+"${pass[@]}"} sh -c 'cd /autocdc && exec "$@"' sh "$@" || status=$?
for c in ${copy_out[@]+"${copy_out[@]}"}; do
	cp -a "$root${c%%:*}" "${c#*:}" || status=1
done
exit $status
}
main "$@"
