#!/usr/bin/env bash
# Runs module test suites in a QEMU guest booted with Debian's kernel.
#   VM_FILES="<extra files>" tests/vm/run-vm.sh <abs path of syshax.ko> <suite>...
# Environment (all optional):
#   VM_FILES          files copied to the guest's /bin but not run
#   SYSHAX_KO_PARAMS  insmod parameters for syshax.ko
#   VM_SUITE_TIMEOUT  seconds per suite in the guest (120)
#   VM_TIMEOUT        seconds for the whole QEMU run (600)
#   VM_DIR            cache and work folder (build/vm under the tree)
#   VM_NUMA           guest NUMA layout: "" (2 nodes, 1 CPU and 1 GiB each)
#                     or "memoryless" (a third CPU on a node with no memory)
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
suite_timeout=${VM_SUITE_TIMEOUT:-120}
vm_timeout=${VM_TIMEOUT:-600}
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

# Nodes 0 and 1: a CPU and 1 GiB each, each CPU its own socket.
numa=(-object "memory-backend-ram,id=m0,size=1G"
	-object "memory-backend-ram,id=m1,size=1G"
	-numa "node,nodeid=0,cpus=0,memdev=m0"
	-numa "node,nodeid=1,cpus=1,memdev=m1")
case $vm_numa in
"") cpus=2 ;;
memoryless)
	# Node 2: CPU 2 and no memory, nearer to node 1 than to node 0, so
	# that "the nearest node with memory" of CPU 2 is node 1, not simply
	# the first. A guest of its own (make vm-check boots it for
	# tests/kmod/numa_test and tools/vm-memoryless.sh): suites that walk
	# every node do not expect a node without memory (engine_ops,
	# numa_split and broker_ut failed in it).
	cpus=3
	numa+=(-numa "node,nodeid=2,cpus=2"
		-numa "dist,src=0,dst=1,val=20" -numa "dist,src=0,dst=2,val=20"
		-numa "dist,src=1,dst=2,val=12")
	;;
*) die "VM_NUMA=$vm_numa: use \"\" or memoryless" ;;
esac

mkdir -p "$vm"
# Per-run files live apart so that parallel runs do not mix them.
run=$(mktemp -d "$vm/run.XXXXXX")
trap 'rm -rf "$run"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
read -r kver kdir < <("$here/kernel.sh" "$vm/kernel") || die "no kernel"
magic=$(modinfo -F vermagic "$ko" | awk '{ print $1 }')
[ "$magic" = "$kver" ] ||
	die "syshax.ko is built for $magic but the guest boots $kver (VM_KVER, default linux-image-amd64's): install linux-headers-$kver and rebuild with make kmod VM_KVER=$kver, or boot the module's kernel with VM_KVER=$magic"

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
} >"$run/vm.conf"
# shellcheck disable=SC2086
"$here/mkinitramfs.sh" "$kver" "$kdir" "$ko" "$run/vm.conf" "$run/initrd.gz" \
	"${suites[@]}" -- ${VM_FILES:-} || die "initramfs failed"

# no_timer_check: on a busy host, software emulation can miss the IO-APIC
# timer check's window, and with interrupt remapping on the kernel then
# panics at boot ("timer doesn't work through Interrupt-remapped IO-APIC").
append="console=ttyS0 quiet panic=-1 no_timer_check log_buf_len=4M hugepages=64 intel_iommu=on"
echo "run-vm.sh: booting $kver${vm_numa:+ ($vm_numa NUMA node)} with ${#suites[@]} suite(s), limit ${vm_timeout}s"
start=$(date +%s)
status=0
# --foreground keeps QEMU in our process group: whoever stops this script
# (Ctrl-C, an outer timeout) stops QEMU with it. sed drops the BIOS's
# terminal escapes from the log.
timeout --foreground -k 10 "$vm_timeout" qemu-system-x86_64 \
	-machine q35 -smp "$cpus,sockets=$cpus,cores=1,threads=1" -m 2G \
	"${numa[@]}" \
	-device intel-iommu -device edu,addr=03.0 -nic none \
	-drive "file=$disk,if=virtio,format=raw,readonly=on" \
	-nographic -vga none -no-reboot \
	-kernel "$kdir/boot/vmlinuz-$kver" -initrd "$run/initrd.gz" \
	-append "$append" \
	</dev/null | sed -u 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g' | tee "$run/console.log" || status=$?
echo "run-vm.sh: QEMU ran $(($(date +%s) - start))s (exit $status), log in $vm/console.log"
verdict=0
awk -v suites="${names[*]}" -v status="$status" -f "$here/parse-console.awk" "$run/console.log" || verdict=$?
mv "$run/console.log" "$vm/console.log"
exit $verdict
