#!/bin/sh
# VM suite: runs the tools against the module in the guest (two NUMA
# nodes, or four): syshax-demo on every node, syshax-bench nop on the kernel
# backend, FFN jobs through the CPU engine, then syshax-run on a tiny
# model with and without a stand-in xPU. The guest is
# software-emulated (no KVM): its latencies show the kernel path works and
# how it compares with the userspace one measured in the same guest, not
# what real hardware does.
set -eu
[ -c /dev/syshax ] || { echo "SKIP: vm-tools: no /dev/syshax"; exit 77; }
# One CPU engine worker on each node with CPUs and memory (syshaxd makes a
# pool of each and wants the threads spread evenly over them).
threads=0
for n in /sys/devices/system/node/node[0-9]*; do
	[ -n "$(cat "$n/cpulist")" ] || continue
	[ "$(awk '/MemTotal/ { print $4 }' "$n/meminfo")" -gt 0 ] || continue
	threads=$((threads + 1))
done
[ "$threads" -ge 2 ] || {
	echo "vm-tools: $threads node(s) with CPUs and memory, want 2 or more" >&2
	exit 1
}
echo "vm-tools: --threads $threads (one per node)"
/bin/syshax-demo
/bin/syshax-bench nop --rounds 1000 --syshaxd /bin/syshaxd
# The CPU engine with one worker on each of the guest's nodes: FFN jobs
# on weights split over all (a small layer: the guest is emulated).
/bin/syshax-bench ffn --type q8_0 --hidden 256 --ff 512 --rounds 5 \
	--seconds 1 --threads "$threads" --syshaxd /bin/syshaxd
# Whole decode steps on the module: a tiny random llama, a 3-token prompt
# and 8 steps of 2 sequences through an engine with a worker on each node;
# with the stand-in xPU taking deferred steps on the same KV buffers the
# tokens are the same.
mkdir -p /tmp/models
/bin/syshax-run --gen-model /tmp/models/tiny.gguf --arch llama \
	--preset tiny --type q8_0
cpu=$(/bin/syshax-run -m /tmp/models/tiny.gguf -t 1,2,3 -n 8 --seqs 2 \
	--threads "$threads" --quiet --syshaxd /bin/syshaxd)
mixed=$(/bin/syshax-run -m /tmp/models/tiny.gguf -t 1,2,3 -n 8 --seqs 2 \
	--threads "$threads" --quiet --xpu-standin --syshaxd /bin/syshaxd)
echo "$cpu"
[ "$cpu" = "$mixed" ] || {
	echo "vm-tools: tokens differ with the stand-in xPU: $mixed" >&2
	exit 1
}
