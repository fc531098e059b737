#!/usr/bin/env bash
# Fetches llama.cpp's libraries from the npm package @node-llama-cpp/linux-x64
# into DIR (default build/ggml): ggml's CPU backend (libggml-base.so,
# libggml-cpu-*.so) for `syshax-bench kernels --ggml DIR`, and libllama with
# libggml and libllama-common for the llama.cpp peer (tools/lib/llama_peer.h).
set -euo pipefail
dir=${1:-build/ggml}
pkg=${SYSHAX_GGML_NPM:-@node-llama-cpp/linux-x64}
command -v npm >/dev/null || { echo "fetch-ggml: npm not found (apt-get install npm)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$pkg" >/dev/null)
tar -xzf "$tmp"/*.tgz -C "$tmp"
mkdir -p "$dir"
bins=$(echo "$tmp"/package/bins/*)
got=()
for f in "$bins"/libggml-base.so "$bins"/libggml-cpu-*.so \
	 "$bins"/libggml.v*.so "$bins"/libllama*.so; do
	[ -f "$f" ] || continue
	cp "$f" "$dir/"
	got+=("${f##*/}")
done
[ -f "$bins/libggml-base.so" ] && ls "$bins"/libggml-cpu-*.so >/dev/null 2>&1 ||
	{ echo "fetch-ggml: no ggml libraries in $pkg" >&2; exit 1; }
# The libraries are named and NEED each other by their versioned names
# (libllama.v0.5.0.so NEEDs libggml.v0.5.0.so) and find each other beside
# themselves (RUNPATH $ORIGIN); the peer opens libllama.so, so each
# versioned library gets its plain name too.
for f in "$bins"/lib*.v*.so; do
	[ -f "$f" ] || continue
	base=${f##*/}
	ln -sfn "$base" "$dir/${base%%.v*}.so"
	got+=("${base%%.v*}.so -> $base")
done
# The bench names the package version beside its figures.
ver=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$tmp/package/package.json" |
	head -n1)
echo "$pkg $ver" > "$dir/VERSION"
echo "fetch-ggml: $pkg $ver in $dir:"
printf '  %s\n' "${got[@]}"
