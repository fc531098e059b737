#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/train/train.py kept alive: a few steps of a shrunken run (seconds),
# twice with the same seed, must write the same bytes (determinism), and
# syshax-convert must turn each model into a GGUF file.
#	train.sh SYSHAX_CONVERT
# Exit 0 pass, 1 fail, 77 (SKIP) without python3-torch or bible-kjv.
set -eu
conv=$1
py=/usr/bin/python3
for m in torch numpy regex matplotlib; do
	$py -c "import $m" 2>/dev/null || {
		echo "SKIP: train: no python3 module $m (scripts/install-deps)"
		exit 77
	}
done
command -v bible >/dev/null || {
	echo "SKIP: train: no bible (Debian's bible-kjv; scripts/install-deps)"
	exit 77
}
tmp=$(mktemp -d /tmp/train_check.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for run in a b; do
	$py "$(dirname "$0")/../../tools/train/train.py" --out "$tmp/$run" \
		--shrink --steps 3 --eval-every 3 >"$tmp/$run.log" 2>&1 || {
		cat "$tmp/$run.log"
		echo "FAIL: train: train.py failed"
		exit 1
	}
done
grep -q "step 3/3 train" "$tmp/a.log" || {
	cat "$tmp/a.log"
	echo "FAIL: train: no progress line"
	exit 1
}
for f in heldout.ids kjv-llama/model.safetensors kjv-qwen3moe/model.safetensors \
	 kjv-llama/tokenizer.json kjv-qwen3moe/config.json; do
	cmp -s "$tmp/a/$f" "$tmp/b/$f" || {
		echo "FAIL: train: $f differs between two runs of one seed"
		exit 1
	}
done
for m in kjv-llama kjv-qwen3moe; do
	"$conv" --type q4_0 "$tmp/a/$m" "$tmp/$m.gguf" || {
		echo "FAIL: train: syshax-convert $m"
		exit 1
	}
done
[ -s "$tmp/a/kjv-qwen3moe/loss.png" ] || { echo "FAIL: train: no loss.png"; exit 1; }
echo "train: 2 x 3 steps, same bytes, converted: ok"
