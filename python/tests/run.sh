#!/usr/bin/env bash
# The Python package's tests (make check-python): a random-weight GGUF
# model from syshax-run --gen-model in a private model_dir, a private
# syshaxd on the userspace backend (scripts/with-syshaxd), then pytest
# over python/tests with the package built in <build>/python/lib.
#   python/tests/run.sh <build dir> <python>
# Exit 77 (SKIP) when torch is missing; numpy or pytest missing fails.
set -u
b=$1
py=$2
top=$(cd "$(dirname "$0")/../.." && pwd)

if ! "$py" -c 'import torch' 2>/dev/null; then
	echo "SKIP: check-python: no torch for $py (apt-get install python3-torch)" >&2
	exit 77
fi
for m in numpy pytest; do
	"$py" -c "import $m" 2>/dev/null || {
		echo "check-python: $py has no $m (apt-get install python3-$m)" >&2
		exit 1
	}
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/syshax-py.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
"$b/syshax-run" --gen-model "$dir/tiny.gguf" --preset tiny --type f32 \
	--seed 3 >/dev/null || exit 1
# The xPU worker's tests (test_xpu.py) also take an MoE model.
"$b/syshax-run" --gen-model "$dir/tinymoe.gguf" --arch qwen3moe \
	--preset tiny --type f32 --seed 4 >/dev/null || exit 1

# Two worker threads: the FFN jobs of the example split over them.
PYTHONPATH="$b/python/lib" PYTHONDONTWRITEBYTECODE=1 \
SYSHAX_TEST_MODEL=tiny.gguf SYSHAX_TEST_MODEL_DIR="$dir" \
SYSHAX_TEST_BUILD="$b" \
	"$top/scripts/with-syshaxd" "$b/syshaxd" --threads 2 \
	--model-dir "$dir" -- \
	timeout 900 "$py" -m pytest -q -p no:cacheprovider "$top/python/tests" \
	-o console_output_style=classic
