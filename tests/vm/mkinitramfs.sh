#!/usr/bin/env bash
# Builds the guest's initramfs.
#   tests/vm/mkinitramfs.sh <kver> <kernel dir> <syshax.ko> <vm.conf> <out.cpio.gz> \
#       <suite>... [-- <extra file>...]
# The image holds busybox, /init (tests/vm/init), /etc/vm.conf, /syshax.ko,
# the kernel modules /init loads (with their dependencies and a fresh
# modules.dep), the suites and extra files in /bin, and every shared library
# they need at the path ldd resolved it to.
set -euo pipefail
# modinfo, modprobe and depmod live in sbin, off a plain user's PATH.
export PATH=$PATH:/usr/sbin:/sbin
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 5 ] || { echo "usage: mkinitramfs.sh <kver> <kdir> <ko> <conf> <out> <suite>... [-- <file>...]" >&2; exit 2; }
kver=$1 kdir=$2 ko=$3 conf=$4 out=$5
shift 5
suites=() files=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do suites+=("$1"); shift; done
[ $# -gt 0 ] && shift
files=("$@")

die() { echo "mkinitramfs.sh: $*" >&2; exit 1; }

root=$(mktemp -d "${out%/*}/root.XXXXXX")
trap 'rm -rf "$root"' EXIT
# mktemp made it 0700, and it becomes the guest's /: users other than root
# (suites drop to nobody) must get through it.
chmod 755 "$root"
mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,lib64,"lib/modules/$kver"}

cp "$(command -v busybox)" "$root/bin/busybox"
cp "$here/init" "$root/init"
chmod 755 "$root/init"
cp "$conf" "$root/etc/vm.conf"
cp "$ko" "$root/syshax.ko"

cat >"$root/etc/passwd" <<'PW'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PW
cat >"$root/etc/group" <<'GR'
root:x:0:
syshax:x:900:
nogroup:x:65534:
GR

# Kernel modules: what /init modprobes, plus what syshax.ko itself needs.
# modprobe --show-depends resolves names, aliases and dependency order.
# shellcheck disable=SC1090
. "$conf"
deps=$(modinfo -F depends "$ko" | tr ',' ' ')
for m in $VM_MODULES $deps; do
	modprobe -d "$kdir" -S "$kver" --show-depends "$m" ||
		die "module $m not found in $kdir"
done | awk '$1 == "insmod" { print $2 }' | sort -u | while read -r path; do
	rel=${path#"$kdir"/}
	rel=${rel#./}
	mkdir -p "$root/$(dirname "$rel")"
	cp "$path" "$root/$rel"
done
cp "$kdir/lib/modules/$kver"/modules.{builtin,builtin.modinfo,order} "$root/lib/modules/$kver/"
depmod -b "$root" "$kver"

# Programs and their shared libraries (and the loader), at the host's paths
# so absolute RUNPATHs still work; /init puts every library folder on
# LD_LIBRARY_PATH for $ORIGIN-relative ones.
for f in "${suites[@]}" "${files[@]}"; do
	[ -f "$f" ] || die "no such file: $f"
	cp "$f" "$root/bin/"
done
for f in "${suites[@]}" "${files[@]}"; do
	ldd "$f" 2>/dev/null | awk '/=> \// { print $3 } /^\t\// { print $1 }' || true
done | sort -u | while read -r lib; do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
	dirname "$lib"
done | sort -u | tr '\n' ':' | sed 's/:$//' >"$root/etc/ld-path"

(cd "$root" && find . | cpio -o -H newc -R 0:0 --quiet | gzip -1) >"$out"
