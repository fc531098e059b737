#!/bin/sh
# VM suite: runs the tools against the module in the guest (two NUMA
# nodes): syshax-demo on every node, syshax-bench nop on the kernel
# backend, then FFN jobs through the CPU engine. The guest is
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
