#!/usr/bin/env bash
# Runs module test suites in a QEMU guest booted with Debian's kernel.
#   VM_FILES="<extra files>" tests/vm/run-vm.sh <abs path of syshax.ko> <suite>...
# Environment (all optional):
#   VM_FILES          files copied to the guest's /bin but not run
#   SYSHAX_KO_PARAMS  insmod parameters for syshax.ko
#   VM_SUITE_TIMEOUT  seconds per suite in the guest (120)
#   VM_TIMEOUT        seconds for the whole QEMU run (600)
#   VM_DIR            cache and work folder (build/vm under the tree)
#   VM_ARCH           amd64 (default: q35, Intel IOMMU) or arm64 (virt,
#                     GICv3, SMMUv3, CPU $VM_CPU, default neoverse-n1);
#                     suites and files must be built for it
#   VM_KVER           the kernel (kernel.sh; default linux-image-$VM_ARCH's)
#   VM_NUMA           guest NUMA layout: "" (2 nodes, 1 CPU and 1 GiB each),
#                     "memoryless" (a third CPU on a node with no memory) or
#                     "4node" (4 nodes, 1 CPU and 1 GiB each, two sockets)
#   VM_NUMA_DIST      node distances "a-b=d ..." (both ways), instead of
#                     the layout's own
# Exit status: 0 when every suite passed or skipped and rmmod succeeded.
# See tests/vm/README.md for the guest's contents and the result lines.
set -euo pipefail
# modinfo, modprobe and depmod live in sbin, off a plain user's PATH.
export PATH=$PATH:/usr/sbin:/sbin
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: run-vm.sh <syshax.ko> <suite>..." >&2; exit 2; }
ko=$1
shift
suites=("$@")
vm=${VM_DIR:-$top/build/vm}
arch=${VM_ARCH:-amd64}
vm_numa=${VM_NUMA:-}

die() { echo "run-vm.sh: $*" >&2; echo "vm-check: 0 passed, ${#suites[@]} failed, 0 skipped"; exit 1; }

[ -r "$ko" ] || die "no module at $ko (make kmod)"
names=()
for s in "${suites[@]}"; do
	[ -x "$s" ] || die "suite $s is not an executable"
	names+=("$(basename "$s")")
done
# Everything lands in the guest's /bin: one name, one file.
# shellcheck disable=SC2086
dups=$(for f in "${suites[@]}" ${VM_FILES:-}; do basename "$f"; done | sort | uniq -d)
[ -z "$dups" ] || die "suites or VM_FILES with the same name: $dups"

# A CPU and 1 GiB on each node, each CPU its own socket; a layout's
# distances unless VM_NUMA_DIST gives others. The limits grow with the
# guest's cost under software emulation: an arm64 guest runs about as fast
# as an amd64 one, but a slow suite took up to 61 s there under load (300 s
# leaves room for a busy host); with four vCPUs on the host's two cores
# conformance took 151 s and jobs_stress 122 s, and the whole run 356 s.
suite_timeout=120 vm_timeout=600 hugepages=64
case $vm_numa in
"") nodes=2 cpus=2 dist= ;;
memoryless)
	# Node 2: CPU 2 and no memory, nearer to node 1 than to node 0, so
	# that "the nearest node with memory" of CPU 2 is node 1, not simply
	# the first. A guest of its own (make vm-check boots it for
	# tests/kmod/numa_test and tools/vm-memoryless.sh): suites that walk
	# every node do not expect a node without memory (engine_ops,
	# numa_split and broker_ut failed in it).
	nodes=2 cpus=3 dist="0-1=20 0-2=20 1-2=12"
	;;
4node)
	# Two sockets of two nodes each, as a Kunpeng 920 reports them
	# (numactl -H): 12 within a socket; across, 20 between the first
	# nodes, 22 or 24 for the others. Equal distances would make node 1's
	# nearest other nodes 2 and 3, not 0 (tests/kmod/buf_test follows the
	# kernel's real order either way).
	nodes=4 cpus=4 hugepages=128 dist="0-1=12 2-3=12 0-2=20 0-3=22 1-2=22 1-3=24"
	suite_timeout=400 vm_timeout=2400
	;;
*) die "VM_NUMA=$vm_numa: use \"\", memoryless or 4node" ;;
esac
[ "$arch" = amd64 ] || [ "$vm_numa" = 4node ] || { suite_timeout=300 vm_timeout=1200; }
suite_timeout=${VM_SUITE_TIMEOUT:-$suite_timeout}
vm_timeout=${VM_TIMEOUT:-$vm_timeout}
dist=${VM_NUMA_DIST:-$dist}
numa=()
for ((n = 0; n < cpus; n++)); do
	if [ $n -lt $nodes ]; then
		numa+=(-object "memory-backend-ram,id=m$n,size=1G"
			-numa "node,nodeid=$n,cpus=$n,memdev=m$n")
	else
		numa+=(-numa "node,nodeid=$n,cpus=$n")
	fi
done
for d in $dist; do
	[[ $d =~ ^([0-9]+)-([0-9]+)=([0-9]+)$ ]] || die "VM_NUMA_DIST: bad entry $d (want a-b=distance)"
	numa+=(-numa "dist,src=${BASH_REMATCH[1]},dst=${BASH_REMATCH[2]},val=${BASH_REMATCH[3]}")
done

mkdir -p "$vm"
# Per-run files live apart so that parallel runs do not mix them.
run=$(mktemp -d "$vm/run.XXXXXX")
trap 'rm -rf "$run"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
read -r kver kdir < <(VM_ARCH=$arch "$here/kernel.sh" "$vm/kernel") || die "no kernel"
magic=$(modinfo -F vermagic "$ko" | awk '{ print $1 }')
[ "$magic" = "$kver" ] ||
	die "syshax.ko is built for $magic but the guest boots $kver (VM_KVER, default linux-image-$arch's): rebuild it for $kver (make vm-check VM_ARCH=$arch VM_KVER=$kver does), or boot the module's kernel with VM_KVER=$magic"

# An arm64 guest gets busybox-static:arm64, unpacked here (installing it
# would replace the host's /bin/busybox: the package is not Multi-Arch),
# and mkinitramfs.sh an ldd that lists an arm64 program's libraries with
# the arm64 loader under qemu-user (libc6:arm64 puts both where the guest
# expects them); both first on its PATH.
if [ "$arch" = arm64 ]; then
	apt_who="run-vm.sh"
	# shellcheck source=scripts/apt-fetch.sh
	. "$top/scripts/apt-fetch.sh"
	bb=$vm/busybox-arm64
	if [ ! -x "$bb/bin/busybox" ]; then
		apt_unpack "$run/bb" busybox-static:arm64 ||
			die "cannot fetch busybox-static:arm64"
		rm -rf "$bb"
		mv -T "$run/bb" "$bb" 2>/dev/null || [ -x "$bb/bin/busybox" ] || die "no $bb/bin/busybox"
	fi
	mkdir "$run/bin"
	ln -s "$bb/bin/busybox" "$run/bin/busybox"
	printf '#!/bin/sh\nexec qemu-aarch64-static /lib/ld-linux-aarch64.so.1 --list "$@"\n' >"$run/bin/ldd"
	chmod 755 "$run/bin/ldd"
	export PATH=$run/bin:$PATH
fi

# The test disk: byte i holds i % 251 (a prime, so no power-of-two period).
disk=$vm/disk.img
if [ ! -s "$disk" ]; then
	pat=$(for i in $(seq 0 250); do printf '\\%03o' "$i"; done)
	# shellcheck disable=SC2059 # the format is the byte pattern itself
	printf "$pat" >"$run/disk"
	while [ "$(stat -c %s "$run/disk")" -lt $((8 << 20)) ]; do
		cat "$run/disk" "$run/disk" >"$run/disk2"
		mv "$run/disk2" "$run/disk"
	done
	truncate -s 8M "$run/disk"
	mv "$run/disk" "$disk"
fi

q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
{
	echo "VM_SUITES=$(q "${names[*]}")"
	echo "VM_MODULES='virtio_pci virtio_blk vgem vfio-pci vfio_iommu_type1'"
	echo "VM_SUITE_TIMEOUT=$(q "$suite_timeout")"
	echo "SYSHAX_KO_PARAMS=$(q "${SYSHAX_KO_PARAMS:-}")"
	# Suites that need the memoryless node fail, not skip, without it.
	[ "$vm_numa" != memoryless ] || echo "export SYSHAX_VM_MEMORYLESS_NODE=2"
	# syshaxd spreads its workers evenly over the nodes: engine_ops' two
	# would not divide over four.
	[ "$nodes" -le 2 ] || echo "export T_ENGINE_THREADS=$nodes"
} >"$run/vm.conf"
# shellcheck disable=SC2086
"$here/mkinitramfs.sh" "$kver" "$kdir" "$ko" "$run/vm.conf" "$run/initrd.gz" \
	"${suites[@]}" -- ${VM_FILES:-} || die "initramfs failed"

append="quiet panic=-1 log_buf_len=4M hugepages=$hugepages"
if [ "$arch" = amd64 ]; then
	qemu=(qemu-system-x86_64 -machine q35 -device intel-iommu -vga none)
	# no_timer_check: on a busy host, software emulation can miss the
	# IO-APIC timer check's window, and with interrupt remapping on the
	# kernel then panics at boot ("timer doesn't work through
	# Interrupt-remapped IO-APIC").
	append="console=ttyS0 $append no_timer_check intel_iommu=on"
else
	# Direct kernel boot with a device tree, no firmware. vfio-pci needs
	# the SMMU: without it edu's probe fails (-22).
	qemu=(qemu-system-aarch64 -machine "virt,gic-version=3,iommu=smmuv3"
		-cpu "${VM_CPU:-neoverse-n1}")
	append="console=ttyAMA0 $append"
fi
echo "run-vm.sh: booting $kver${vm_numa:+ ($vm_numa NUMA layout)} with ${#suites[@]} suite(s), limits ${suite_timeout}s a suite, ${vm_timeout}s in all"
start=$(date +%s)
status=0
# --foreground keeps QEMU in our process group: whoever stops this script
# (Ctrl-C, an outer timeout) stops QEMU with it. sed drops the BIOS's
# terminal escapes from the log.
timeout --foreground -k 10 "$vm_timeout" "${qemu[@]}" \
	-smp "$cpus,sockets=$cpus,cores=1,threads=1" -m "${nodes}G" \
	"${numa[@]}" \
	-device edu,addr=03.0 -nic none \
	-drive "file=$disk,if=virtio,format=raw,readonly=on" \
	-nographic -no-reboot \
	-kernel "$kdir/boot/vmlinuz-$kver" -initrd "$run/initrd.gz" \
	-append "$append" \
	</dev/null | sed -u 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g' | tee "$run/console.log" || status=$?
echo "run-vm.sh: QEMU ran $(($(date +%s) - start))s (exit $status), log in $vm/console.log"
verdict=0
awk -v suites="${names[*]}" -v status="$status" -f "$here/parse-console.awk" "$run/console.log" || verdict=$?
mv "$run/console.log" "$vm/console.log"
exit $verdict
