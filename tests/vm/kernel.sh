#!/usr/bin/env bash
# Fetches a Debian kernel for the guest's architecture ($VM_ARCH: amd64,
# the default, or arm64) into a cache folder and prints "<version>
# <folder>" on stdout: $VM_KVER (an ABI name like 6.1.0-57-amd64 or
# 6.12.117+deb12-arm64), else the version linux-image-$VM_ARCH depends on.
#   tests/vm/kernel.sh <cache dir>
#   tests/vm/kernel.sh --kver     that version only (nothing fetched; empty
#                                 when apt does not know linux-image-$VM_ARCH)
#   tests/vm/kernel.sh --newest <series>   the newest ABI name of a series
#                                 (6.12) apt knows for $VM_ARCH, plain
#                                 flavour (no -rt, -cloud, -16k); nothing
#                                 fetched
# The folder holds boot/vmlinuz-<version> and lib/modules/<version> with a
# fresh modules.dep. A second call finds the cache and downloads nothing.
# Each architecture and series (amd64-6.1, arm64-6.1, amd64-6.12) has its
# own slot in the cache, where a newer kernel replaces an older one.
set -euo pipefail
# modinfo, modprobe and depmod live in sbin, off a plain user's PATH.
export PATH=$PATH:/usr/sbin:/sbin
cache=${1:?usage: kernel.sh <cache dir> | --kver | --newest <series>}
arch=${VM_ARCH:-amd64}
case $arch in
amd64 | arm64) ;;
*) echo "kernel.sh: VM_ARCH=$arch: use amd64 or arm64" >&2; exit 2 ;;
esac

say() { echo "kernel.sh: $*" >&2; }
apt_who="kernel.sh"
# shellcheck source=scripts/apt-fetch.sh
. "$(dirname "$0")/../../scripts/apt-fetch.sh"

# The ABI name the meta package points at, e.g. 6.1.0-56-amd64 (on a
# multiarch host apt names the foreign one linux-image-6.1.0-56-arm64:arm64).
image_version() {
	apt-cache depends "linux-image-$arch" 2>/dev/null |
		sed -n "s/^ *Depends: linux-image-\([0-9].*-$arch\)\(:$arch\)\{0,1\}\$/\1/p" |
		head -n 1
}

if [ "$cache" = --newest ]; then
	series=${2:?usage: kernel.sh --newest <series>}
	apt-cache pkgnames "linux-image-$series." |
		sed -n "s/^linux-image-\($series\.[0-9][^-]*-$arch\)\$/\1/p" |
		sort -V | tail -n 1
	exit 0
fi
if [ "$cache" = --kver ]; then
	if [ -n "${VM_KVER:-}" ]; then echo "$VM_KVER"; else image_version || true; fi
	exit 0
fi
kver=${VM_KVER:-$(image_version || true)}
if [ -z "$kver" ]; then
	say "linux-image-$arch unknown to apt"
	apt_update_once || exit 1
	kver=$(image_version || true)
	[ -n "$kver" ] || { say "apt knows no linux-image-$arch"; exit 1; }
fi

# Same package version as the installed headers the module is built with;
# the candidate when those headers are not installed, or when the archive
# no longer has that version (same ABI name, so modversions still match).
# arm64: the unsigned image, a plain Image that -kernel boots as it is.
pkg=linux-image-$kver
[ "$arch" = amd64 ] || pkg=linux-image-$kver-unsigned:$arch
cand=$(apt_candidate "$pkg")
pver=$(dpkg-query -W -f='${Version}' "linux-headers-$kver" 2>/dev/null || true)
[ -n "$pver" ] || pver=$cand
[ -n "$pver" ] || { say "no candidate for $pkg"; exit 1; }

mkdir -p "$cache"
# Runs in parallel (several people, one checkout) fetch it once.
exec 9>"$cache/.lock"
flock 9
# Kernels of the old layout (one kernel straight in the cache) are dead
# weight now.
find "$cache" -mindepth 1 -maxdepth 1 -name '[0-9]*' -exec rm -rf {} +
minor=${kver#*.}
slot=$cache/$arch-${kver%%.*}.${minor%%[!0-9]*}

# Unpacks $pkg=$1 into $slot/$kver-$1; fails when apt cannot get it.
# (Called as a condition, so set -e does not apply: every step is checked.)
fetch() {
	local d=$slot/$kver-$1
	[ -e "$d/.done" ] && return 0
	say "downloading $pkg=$1 into $d"
	rm -rf "$d"
	if apt_unpack "$d" "$pkg=$1" &&
		depmod -b "$d" "$kver"; then
		touch "$d/.done"
	else
		rm -rf "$d"
		return 1
	fi
}

# Stale package lists point at files the mirror no longer has.
if ! fetch "$pver" && apt_update_once; then
	cand=$(apt_candidate "$pkg")
fi
if ! fetch "$pver"; then
	if [ -z "$cand" ] || [ "$cand" = "$pver" ]; then
		say "cannot download $pkg=$pver"
		exit 1
	fi
	say "$pkg=$pver is gone from the archive: using $cand"
	pver=$cand
	fetch "$pver" || { say "cannot download $pkg=$pver"; exit 1; }
fi
dir=$slot/$kver-$pver
# Older kernels of the slot are dead weight (200-450 MiB each).
find "$slot" -mindepth 1 -maxdepth 1 ! -name "$(basename "$dir")" -exec rm -rf {} +
[ -r "$dir/boot/vmlinuz-$kver" ] || { say "no boot/vmlinuz-$kver in $dir"; exit 1; }
echo "$kver $dir"
