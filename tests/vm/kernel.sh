#!/usr/bin/env bash
# Fetches Debian's amd64 kernel into a cache folder and prints "<version>
# <folder>" on stdout: $VM_KVER (an ABI name like 6.1.0-57-amd64), else
# the version linux-image-amd64 depends on.
#   tests/vm/kernel.sh <cache dir>
#   tests/vm/kernel.sh --kver     that version only (nothing fetched; empty
#                                 when apt does not know linux-image-amd64)
# The folder holds boot/vmlinuz-<version> and lib/modules/<version> with a
# fresh modules.dep. A second call finds the cache and downloads nothing.
set -euo pipefail
# modinfo, modprobe and depmod live in sbin, off a plain user's PATH.
export PATH=$PATH:/usr/sbin:/sbin
cache=${1:?usage: kernel.sh <cache dir> | --kver}

say() { echo "kernel.sh: $*" >&2; }

# The ABI name the meta package points at, e.g. 6.1.0-56-amd64.
image_version() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: linux-image-\([0-9].*-amd64\)$/\1/p' | head -n 1
}

if [ "$cache" = --kver ]; then
	if [ -n "${VM_KVER:-}" ]; then echo "$VM_KVER"; else image_version || true; fi
	exit 0
fi
kver=${VM_KVER:-$(image_version || true)}
if [ -z "$kver" ]; then
	# A fresh CI machine has no package lists yet.
	[ "$(id -u)" -eq 0 ] || { say "linux-image-amd64 unknown to apt and not root: run apt-get update"; exit 1; }
	say "linux-image-amd64 unknown to apt: running apt-get update"
	apt-get update -q >&2
	kver=$(image_version || true)
	[ -n "$kver" ] || { say "apt knows no linux-image-amd64"; exit 1; }
fi

# Same package version as the installed headers the module is built with;
# the candidate when those headers are not installed, or when the archive
# no longer has that version (same ABI name, so modversions still match).
pkg=linux-image-$kver
cand=$(apt-cache policy "$pkg" | sed -n 's/^ *Candidate: //p')
[ "$cand" != "(none)" ] || cand=
pver=$(dpkg-query -W -f='${Version}' "linux-headers-$kver" 2>/dev/null || true)
[ -n "$pver" ] || pver=$cand
[ -n "$pver" ] || { say "no candidate for $pkg"; exit 1; }

mkdir -p "$cache"
# Runs in parallel (several people, one checkout) fetch it once.
exec 9>"$cache/.lock"
flock 9

# Unpacks $pkg=$1 into $cache/$kver-$1; fails when apt cannot get it.
# (Called as a condition, so set -e does not apply: every step is checked.)
fetch() {
	local d=$cache/$kver-$1
	[ -e "$d/.done" ] && return 0
	say "downloading $pkg=$1 into $d"
	rm -rf "$d"
	if mkdir -p "$d/deb" &&
		(cd "$d/deb" && apt-get download -q "$pkg=$1" >&2) &&
		dpkg -x "$d"/deb/*.deb "$d" &&
		rm -rf "$d/deb" &&
		depmod -b "$d" "$kver"; then
		touch "$d/.done"
	else
		rm -rf "$d"
		return 1
	fi
}

# Stale package lists point at files the mirror no longer has.
if ! fetch "$pver" && [ "$(id -u)" -eq 0 ]; then
	say "download failed: running apt-get update and trying again"
	apt-get update -q >&2
	cand=$(apt-cache policy "$pkg" | sed -n 's/^ *Candidate: //p')
	[ "$cand" != "(none)" ] || cand=
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
dir=$cache/$kver-$pver
# Other kernels in the cache are dead weight (~400 MiB each).
find "$cache" -mindepth 1 -maxdepth 1 ! -name "$(basename "$dir")" ! -name .lock -exec rm -rf {} +
[ -r "$dir/boot/vmlinuz-$kver" ] || { say "no boot/vmlinuz-$kver in $dir"; exit 1; }
echo "$kver $dir"
