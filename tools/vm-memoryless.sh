#!/bin/sh
# VM suite of the memoryless guest (VM_NUMA=memoryless: node 2 has CPU 2
# and no memory, nearest to node 1): a CPU of a node without memory joins
# the worker pool of its nearest node with memory, so syshaxd's CPU engine
# sees two nodes (0: CPU 0; 1: CPUs 1, 2) and two workers spread evenly
# over them, one per node, run a whole decode with weights on nodes 0 and
# 1. (Counting node 2 as a node of its own, two workers would not divide
# evenly over three nodes and the daemon would not start.)
set -eu
[ -c /dev/syshax ] || { echo "SKIP: vm-memoryless: no /dev/syshax"; exit 77; }
mkdir -p /tmp/models
/bin/syshax-run --gen-model /tmp/models/tiny.gguf --arch llama \
	--preset tiny --type q8_0
out=$(/bin/syshax-run -m /tmp/models/tiny.gguf -t 1,2,3 -n 4 --seqs 1 \
	--threads 2 --quiet --syshaxd /bin/syshaxd 2>&1) || {
	echo "vm-memoryless: syshax-run failed: $out" >&2
	exit 1
}
echo "$out"
