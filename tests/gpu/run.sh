#!/usr/bin/env bash
# The xPU worker on an NVIDIA GPU, by hand (not in make check: CI has no
# GPU). Offline, a few minutes: builds what it needs, starts syshaxd on
# the userspace backend and the PyTorch worker on cuda, and checks
#  (a) CUDA kernels read and write a registered syshax buffer in place
#      (tests/gpu/inplace.py: bytes checked from the CPU side);
#  (b) syshax-run's greedy tokens with the prefills on the GPU and the
#      decode steps split between GPU and CPU equal the CPU-only run's
#      (trained llama, F32 weights, f32 KV, the worker in f32 without
#      TF32);
#  (c) prints the GPU's prefill tokens/s (also in bf16), the CPU's decode
#      tokens/s and the split.
#   tests/gpu/run.sh [--dry-run] [build dir (default: build)]
# Exit 0 when every check ran and passed, 1 when one failed or did not
# run, 77 (SKIP) without an NVIDIA GPU, CUDA torch or python3-torch.
# --dry-run: the same checks with the worker on the CPU, here; it fails,
# not skips, if a check would not have run.
set -u
top=$(realpath "$(dirname "$0")/../..")
dev=cuda
if [ "${1:-}" = --dry-run ]; then
	dev=cpu
	shift
fi
b=$(realpath -m "${1:-$top/build}")
# $PYTHON, else the first of Debian's python3 and the python3 on PATH (a
# venv's, say) that has torch; the package is built for it (make's
# python-ext).
py=${PYTHON:-}
if [ -z "$py" ]; then
	for py in /usr/bin/python3 "$(command -v python3 || echo python3)"; do
		"$py" -c 'import torch' 2>/dev/null && break
	done
fi
export PYTHON=$py
expect="inplace tokens rates"

if [ "${2:-}" != --inner ]; then
	if ! "$py" -c 'import torch' 2>/dev/null; then
		echo "SKIP: tests/gpu: no torch for $py" >&2
		exit 77
	fi
	if [ "$dev" = cuda ] && ! "$py" -c 'import torch, sys
sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
		echo "SKIP: tests/gpu: no CUDA device for torch" \
			"($(nvidia-smi -L 2>&1 | head -1))" >&2
		exit 77
	fi
	mode=()
	[ "$dev" = cpu ] && mode=(--dry-run)
	cd "$top" || exit 1
	"${MAKE:-make}" -j"$(nproc)" B="$b" PYTHON="$py" "$b/syshaxd" \
		"$b/syshax-run" python-ext "$b/models/kjv-llama-f32.gguf" \
		>/dev/null || exit 1
	log=$(mktemp "${TMPDIR:-/tmp}/syshax-gpu.XXXXXX") || exit 1
	trap 'rm -f "$log"' EXIT
	"$top/scripts/with-syshaxd" "$b/syshaxd" --model-dir "$b/models" -- \
		"$0" "${mode[@]}" "$b" --inner 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	# Every check must have said so: none skipped by mistake.
	for c in $expect; do
		if ! grep -q "^CHECK $c $dev: ok" "$log"; then
			echo "FAIL: tests/gpu: check '$c' on $dev did not run" >&2
			rc=1
		fi
	done
	exit "$rc"
fi

export PYTHONPATH="$b/python/lib" PYTHONDONTWRITEBYTECODE=1
dir=$(mktemp -d "${TMPDIR:-/tmp}/syshax-gpu.XXXXXX")
wpid=
trap '[ -n "$wpid" ] && kill "$wpid" 2>/dev/null; rm -rf "$dir"' EXIT
model=$b/models/kjv-llama-f32.gguf
prompt=$(seq -s, 1 64)

field() {
	"$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

worker() {	# worker <dtype>
	rm -f "$dir/x.sock"
	"$py" -m syshax.xpu --socket "$dir/x.sock" --device "$dev" \
		--dtype "$1" 2>"$dir/w.log" &
	wpid=$!
	for _ in $(seq 600); do
		[ -S "$dir/x.sock" ] && grep -q "device $dev" "$dir/w.log" &&
			return 0
		kill -0 "$wpid" 2>/dev/null || break
		sleep 0.1
	done
	echo "FAIL: the worker did not start on $dev:" >&2
	cat "$dir/w.log" >&2
	exit 1
}

stop_worker() {
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	wpid=
}

run() {		# run <json out> [option]...
	local out=$1
	shift
	"$b/syshax-run" -m "$model" -t "$prompt" -n 64 --seqs 8 --kv-type f32 \
		--json "$@" >"$out" 2>"$dir/err" || {
		echo "FAIL: syshax-run $*:" >&2
		cat "$dir/err" "$dir/w.log" >&2
		exit 1
	}
}

# (a)
"$py" "$(dirname "$0")/inplace.py" "$dev" || exit 1

# (b)
run "$dir/cpu.json"
worker f32
run "$dir/x.json" --xpu-worker "$dir/x.sock"
stop_worker
grep -q "on $dev" "$dir/w.log" || { echo "FAIL: worker not on $dev" >&2; exit 1; }
if [ "$(field "$dir/x.json" tokens)" != "$(field "$dir/cpu.json" tokens)" ] ||
   [ "$(field "$dir/x.json" prefill_side)" != X ] ||
   [ "$(field "$dir/x.json" steps_xpu)" -lt 1 ]; then
	echo "FAIL: tokens with the worker on $dev differ from the CPU's:" >&2
	cat "$dir/x.json" "$dir/cpu.json" >&2
	exit 1
fi
echo "CHECK tokens $dev: ok: 8 x 64 tokens equal the CPU-only run's;" \
	"steps $(field "$dir/x.json" sides)"

# (c)
worker bf16
run "$dir/bf.json" --xpu-worker "$dir/x.sock"
stop_worker
echo "CHECK rates $dev: ok: prefill on $dev: $(field "$dir/x.json" prefill_tps)" \
	"tokens/s (f32), $(field "$dir/bf.json" prefill_tps) (bf16);" \
	"CPU-only decode: $(field "$dir/cpu.json" decode_tps) tokens/s;" \
	"split decode: $(field "$dir/x.json" decode_tps) tokens/s," \
	"$(field "$dir/x.json" steps_xpu) steps on $dev," \
	"$(field "$dir/x.json" steps_cpu) on the CPU"
