#!/bin/sh
# VM suite: runs the tools against the module in the guest (two NUMA
# nodes): syshax-demo on every node, then syshax-bench nop on the kernel
# backend. The guest is software-emulated (no KVM): its latencies show the
# kernel path works and how it compares with the userspace one measured in
# the same guest, not what real hardware does.
set -eu
[ -c /dev/syshax ] || { echo "SKIP: vm-tools: no /dev/syshax"; exit 77; }
/bin/syshax-demo
/bin/syshax-bench nop --rounds 1000 --syshaxd /bin/syshaxd
