#!/bin/sh
# VM suite: runs the tools against the module in the guest (two NUMA
# nodes): syshax-demo on every node, syshax-bench nop on the kernel
# backend, FFN jobs through the CPU engine, then syshax-run on a tiny
# model with and without a stand-in xPU. The guest is
# software-emulated (no KVM): its latencies show the kernel path works and
# how it compares with the userspace one measured in the same guest, not
# what real hardware does.
set -eu
[ -c /dev/syshax ] || { echo "SKIP: vm-tools: no /dev/syshax"; exit 77; }
/bin/syshax-demo
/bin/syshax-bench nop --rounds 1000 --syshaxd /bin/syshaxd
# The CPU engine with one worker on each of the guest's two nodes: FFN jobs
# on weights split over both (a small layer: the guest is emulated).
/bin/syshax-bench ffn --type q8_0 --hidden 256 --ff 512 --rounds 5 \
	--seconds 1 --threads 2 --syshaxd /bin/syshaxd
# Whole decode steps on the module: a tiny random llama, a 3-token prompt
# and 8 steps of 2 sequences through an engine with a worker on each node;
# with the stand-in xPU taking deferred steps on the same KV buffers the
# tokens are the same.
mkdir -p /tmp/models
/bin/syshax-run --gen-model /tmp/models/tiny.gguf --arch llama \
	--preset tiny --type q8_0
cpu=$(/bin/syshax-run -m /tmp/models/tiny.gguf -t 1,2,3 -n 8 --seqs 2 \
	--threads 2 --quiet --syshaxd /bin/syshaxd)
mixed=$(/bin/syshax-run -m /tmp/models/tiny.gguf -t 1,2,3 -n 8 --seqs 2 \
	--threads 2 --quiet --xpu-standin --syshaxd /bin/syshaxd)
echo "$cpu"
[ "$cpu" = "$mixed" ] || {
	echo "vm-tools: tokens differ with the stand-in xPU: $mixed" >&2
	exit 1
}
