#!/usr/bin/env bash
# syshax-run end to end on random-weight models (a tiny llama and a tiny
# qwen3moe) and private syshaxds: n tokens per sequence below n_vocab;
# continuous batching changes no sequence's tokens; the stand-in xPU gives
# the CPU's tokens with both sides running steps; usage errors exit 2, a
# token id >= n_vocab and a model outside a running daemon's model_dir are
# refused with a message; -p: the prompt's ids are the generated SPM
# vocabulary's (BOS, then byte tokens), the tokens those of -t with the
# same ids, the text their pieces as Python decodes them, streamed after
# the prompt.
#   tests/run/run.sh <syshax-run> <syshaxd>
set -u
# Absolute: one check runs from another folder.
run=$(realpath "${1:?usage: run.sh <syshax-run> <syshaxd>}")
daemon=$(realpath "${2:?usage: run.sh <syshax-run> <syshaxd>}")
here=$(realpath "$(dirname "$0")")
fails=0
dir=$(mktemp -d "${TMPDIR:-/tmp}/syshax-run.XXXXXX")
trap 'rm -rf "$dir"' EXIT

ok() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }

check() {	# check <what> <expected status> <command>...
	local what=$1 want=$2 got
	shift 2
	"$@" >"$dir/out" 2>&1
	got=$?
	if [ "$got" -eq "$want" ]; then
		ok "$what"
	else
		fail "$what: status $got, want $want"
		cat "$dir/out"
	fi
}

# syshax-run on a private daemon with two worker threads.
srun() {
	"$run" --private --threads 2 --syshaxd "$daemon" "$@"
}

# Line "seq <i>:" of a --quiet output file, without the label.
seq_line() {	# seq_line <file> <i>
	sed -n "s/^seq $2: //p" "$1"
}

# A JSON number field of a --json output file.
json_num() {	# json_num <file> <key>
	sed -n "s/.*\"$2\": \([0-9]*\).*/\1/p" "$1"
}

for m in llama:q4_0 qwen3moe:q8_0; do
	arch=${m%%:*}
	model=$dir/$arch.gguf
	check "$arch: --gen-model" 0 "$run" --gen-model "$model" \
		--arch "$arch" --preset tiny --type "${m#*:}" --seed 7

	# (a) n tokens per sequence, each below n_vocab.
	if srun -m "$model" -t 3,1,4,1 -n 8 --seqs 4 --json \
		>"$dir/a.json" 2>"$dir/err"; then
		vocab=$(json_num "$dir/a.json" n_vocab)
		toks=$(sed 's/.*"tokens": \[\(.*\)\]\], .*/\1]/' "$dir/a.json")
		ids=$(echo "$toks" | tr -c '0-9\n' ' ' | wc -w)
		big=$(echo "$toks" | tr -c '0-9' '\n' | awk -v v="$vocab" \
			'$1 != "" && $1 >= v' | wc -l)
		if [ "$ids" -eq 32 ] && [ "$big" -eq 0 ] && [ "$vocab" -gt 0 ]; then
			ok "$arch: 4 x 8 tokens below n_vocab $vocab"
		else
			fail "$arch: tokens: $(cat "$dir/a.json")"
		fi
	else
		fail "$arch: run failed: $(cat "$dir/err")"
		continue
	fi

	# (b) each sequence of a batch of 4 decodes as it does alone.
	srun -m "$model" -t 3,1,4,1 -n 8 --seqs 4 --quiet >"$dir/$arch.b4" 2>&1
	same=0
	for i in 0 1 2 3; do
		srun -m "$model" -t $((3 + i)),1,4,1 -n 8 --quiet \
			>"$dir/b1" 2>&1
		[ -n "$(seq_line "$dir/b1" 0)" ] &&
			[ "$(seq_line "$dir/b1" 0)" = "$(seq_line "$dir/$arch.b4" $i)" ] &&
			same=$((same + 1))
	done
	if [ "$same" -eq 4 ]; then
		ok "$arch: --seqs 4 gives each sequence's tokens alone"
	else
		fail "$arch: --seqs 4 vs alone: $same of 4 equal"
		cat "$dir/$arch.b4"
	fi

	# (c) the stand-in xPU: the CPU's tokens, both sides ran steps.
	srun -m "$model" -t 3,1,4,1 -n 8 --seqs 4 --xpu-standin --json \
		>"$dir/c.json" 2>"$dir/err"
	if [ "$(sed 's/.*"tokens": \(.*\]\]\).*/\1/' "$dir/c.json")" = \
	     "$(sed 's/.*"tokens": \(.*\]\]\).*/\1/' "$dir/a.json")" ] &&
	   [ "$(json_num "$dir/c.json" steps_cpu)" -ge 1 ] &&
	   [ "$(json_num "$dir/c.json" steps_xpu)" -ge 1 ]; then
		ok "$arch: --xpu-standin: same tokens, steps on both sides"
	else
		fail "$arch: --xpu-standin: $(cat "$dir/c.json" "$dir/err")"
	fi
done

# (d) usage errors, refused tokens and paths.
model=$dir/llama.gguf
check "--help" 0 "$run" --help
check "unknown option" 2 "$run" --frob
check "no prompt" 2 "$run" -m "$model"
check "bad token list" 2 "$run" -m "$model" -t 1,,2
check "negative token" 2 "$run" -m "$model" -t -1
check "-n 0" 2 "$run" -m "$model" -t 1 -n 0
check "bad --kv-type" 2 "$run" -m "$model" -t 1 --kv-type q4_0
check "bad --arch" 2 "$run" --gen-model "$dir/x.gguf" --arch gpt2
check "unknown --preset" 2 "$run" --gen-model "$dir/x.gguf" --preset 3b
check "a shape under another arch" 2 "$run" --gen-model "$dir/x.gguf" \
	--preset qwen2.5-0.5b --arch llama
grep -q "a qwen2 shape, not llama" "$dir/out" ||
	fail "a shape under another arch: no message: $(cat "$dir/out")"
# A real model's shape takes its own arch; cut to a layer, it decodes.
check "--preset qwen2.5-0.5b" 0 "$run" --gen-model "$dir/shape.gguf" \
	--preset qwen2.5-0.5b --layers 1 --type q8_0
if srun -m "$dir/shape.gguf" -t 3,1,4 -n 2 --json >"$dir/s.json" 2>&1 &&
   grep -q '"arch": "qwen2"' "$dir/s.json" &&
   [ "$(json_num "$dir/s.json" n_vocab)" = 151936 ]; then
	ok "the qwen2.5-0.5b shape: qwen2, vocabulary 151936, decodes"
else
	fail "the qwen2.5-0.5b shape: $(cat "$dir/s.json")"
fi
check "--type without --gen-model" 2 "$run" -m "$model" -t 1 --type f16
check "token >= n_vocab" 1 srun -m "$model" -t 1,1000000
grep -q "not below the model's n_vocab" "$dir/out" ||
	fail "token >= n_vocab: no message: $(cat "$dir/out")"
check "missing model" 1 srun -m "$dir/none.gguf" -t 1
grep -q "No such file" "$dir/out" || fail "missing model: no message"

# A running daemon: a path outside its model_dir is refused and says so;
# under it, the path as given loads and decodes as a private daemon does.
check "running daemon without model_dir" 1 "$here/../../scripts/with-syshaxd" \
	"$daemon" --threads 2 -- "$run" -m "$model" -t 3,1,4,1 -n 8
grep -q "model_dir" "$dir/out" || fail "model_dir refusal: no message"
(cd / && "$here/../../scripts/with-syshaxd" "$daemon" --threads 2 \
	--model-dir "$dir" -- "$run" -m llama.gguf -t 3,1,4,1 -n 8 --quiet) \
	>"$dir/d" 2>/dev/null
if [ "$(seq_line "$dir/d" 0)" = "$(seq_line "$dir/llama.b4" 0)" ] &&
   [ -n "$(seq_line "$dir/d" 0)" ]; then
	ok "running daemon: path relative to its model_dir"
else
	fail "running daemon: $(cat "$dir/d")"
fi

# (e) -p: text in, text out, with the model's tokenizer. genmodel's
# vocabulary: <unk> <s> </s>, byte b at 3 + b, then "\u2581t<id>" pieces.
srun -m "$model" -p "Once upon a time" -n 12 --json >"$dir/e.json" 2>"$dir/err"
ids=$(python3 -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))["prompt"])))' \
	"$dir/e.json" 2>/dev/null)
want=$(python3 -c 'print(",".join(map(str, [1] + [3 + b for b in " Once upon a time".replace(" ", "\u2581").encode()])))')
if [ -n "$ids" ] && [ "$ids" = "$want" ]; then
	ok "-p: the prompt's ids"
else
	fail "-p: prompt ids '$ids', want '$want': $(cat "$dir/e.json" "$dir/err")"
fi
srun -m "$model" -t "$want" -n 12 --json >"$dir/e2.json" 2>"$dir/err"
if [ "$(sed 's/.*"tokens": \(.*\]\]\).*/\1/' "$dir/e.json")" = \
     "$(sed 's/.*"tokens": \(.*\]\]\).*/\1/' "$dir/e2.json")" ]; then
	ok "-p: the tokens of -t with its ids"
else
	fail "-p: tokens differ from -t's: $(cat "$dir/e.json" "$dir/e2.json")"
fi
if python3 - "$dir/e.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
raw = b"".join(b"" if i < 3 else bytes([i - 3]) if i < 259 else
               (" t%d" % i).encode() for i in r["tokens"][0])
sys.exit(r["text"][0] != raw.decode("utf-8", "replace"))
PY
then
	ok "-p: the text is the tokens' pieces"
else
	fail "-p: text: $(cat "$dir/e.json")"
fi
srun -m "$model" -p "Once upon a time" -n 12 --quiet >"$dir/e.txt" 2>"$dir/err"
if python3 - "$dir/e.txt" "$dir/e.json" <<'PY'
import json, sys
got = open(sys.argv[1], encoding="utf-8").read()
sys.exit(got != "Once upon a time" + json.load(open(sys.argv[2]))["text"][0] + "\n")
PY
then
	ok "-p --quiet: the prompt, then the text"
else
	fail "-p --quiet: $(cat "$dir/e.txt" "$dir/err")"
fi
check "-p and -t" 2 "$run" -m "$model" -t 1 -p x
check "-p without the model here" 1 srun -m "$dir/none.gguf" -p x
grep -q "needs the model's tokenizer" "$dir/out" ||
	fail "-p without the model: no message: $(cat "$dir/out")"

echo "syshax-run tests: $fails failed"
[ "$fails" -eq 0 ]
