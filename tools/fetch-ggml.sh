#!/usr/bin/env bash
# Fetches ggml's CPU backend libraries (libggml-base.so, libggml-cpu-*.so)
# from the npm package @node-llama-cpp/linux-x64 into DIR (default
# build/ggml), for `syshax-bench kernels --ggml DIR`.
set -euo pipefail
dir=${1:-build/ggml}
pkg=${SYSHAX_GGML_NPM:-@node-llama-cpp/linux-x64}
command -v npm >/dev/null || { echo "fetch-ggml: npm not found (apt-get install npm)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$pkg" >/dev/null)
tar -xzf "$tmp"/*.tgz -C "$tmp"
mkdir -p "$dir"
n=0
for f in "$tmp"/package/bins/*/libggml-base.so "$tmp"/package/bins/*/libggml-cpu-*.so; do
	[ -f "$f" ] || continue
	cp "$f" "$dir/"
	n=$((n + 1))
done
[ "$n" -gt 1 ] || { echo "fetch-ggml: no ggml libraries in $pkg" >&2; exit 1; }
# The bench names the package version beside its figures.
ver=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$tmp/package/package.json" | head -n1)
echo "$pkg $ver" > "$dir/VERSION"
echo "fetch-ggml: $n libraries from $pkg in $dir"
