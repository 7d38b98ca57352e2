#!/usr/bin/env bash
# bench/gpukit/stage.sh: builds the GPU kit into one ignored folder,
# .gpukit/ at the repository root (GPUKIT_DIR overrides), for a machine
# with a GPU and no Go:
#
#   .gpukit/run.sh        the device command (bench/gpukit/run.sh)
#   .gpukit/kit.tar.xz    test binaries (go test -c) of the packages in
#                         bench/gpukit/tests.txt with their testdata, the
#                         binaries of bench/gpukit, bench/grpostep,
#                         bench/randomhf and examples/poker, the golden
#                         fixtures (../shared/golden), the Qwen tokenizer
#                         and the Qwen2.5-0.5B config, bench/hf_grpostep.py
#   .gpukit/MANIFEST.txt  commit, Go version, glibc versions, sizes
#
# Binaries are cgo builds (the XLA backend) linked against this machine's
# glibc; the script fails if any needs a glibc symbol version above
# GPUKIT_MAX_GLIBC (default 2.35, Ubuntu 22.04's; 24.04 has 2.39), and if
# the folder exceeds GPUKIT_MAX_MB (default 40 MiB: a device call carries
# 64 MiB with the working tree).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
kit=${GPUKIT_DIR:-$root/.gpukit}
shared=${GPUKIT_SHARED:-$root/../shared}
list=bench/gpukit/tests.txt
max_mb=${GPUKIT_MAX_MB:-40}
max_glibc=${GPUKIT_MAX_GLIBC:-2.35}
start=$SECONDS

[ -d "$shared/golden" ] || { echo "stage: $shared/golden is missing" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/repo" "$stage/bin" "$stage/shared/tokenizers" "$stage/configs"

# The packages whose tests run on the device: the first column of the list.
packages=$(awk '!/^#/ && NF { print $1 }' "$list" | sort -u)
export CGO_ENABLED=1
ldflags='-s -w'
for p in $packages; do
	mkdir -p "$stage/repo/$p"
	echo "stage: go test -c ./$p"
	go test -c -ldflags="$ldflags" -o "$stage/repo/$p/$(basename "$p").test" "./$p"
	if [ -d "$p/testdata" ]; then cp -r "$p/testdata" "$stage/repo/$p/"; fi
done
cp go.mod "$stage/repo/" # the tests find ../shared from the folder holding go.mod
for c in bench/gpukit bench/grpostep bench/randomhf examples/poker; do
	echo "stage: go build ./$c"
	go build -ldflags="$ldflags" -o "$stage/bin/$(basename "$c")" "./$c"
done
cp -r "$shared/golden" "$stage/shared/"
cp "$shared/tokenizers/qwen3.tokenizer.json.gz" "$shared/tokenizers/qwen3.tokenizer_config.json" "$stage/shared/tokenizers/"
cp model/testdata/configs/Qwen2.5-0.5B-Instruct.json "$stage/configs/"
cp bench/hf_grpostep.py "$list" "$stage/"
chmod -R u+w "$stage"

# The highest GLIBC_x.y symbol version any binary needs.
glibc=$(for f in "$stage"/bin/* "$stage"/repo/*/*.test; do objdump -T "$f"; done |
	grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
echo "stage: highest glibc symbol version required: GLIBC_$glibc (allowed: up to $max_glibc; Ubuntu 22.04 has 2.35, 24.04 2.39)"
if [ "$(printf '%s\n%s\n' "$glibc" "$max_glibc" | sort -V | tail -1)" != "$max_glibc" ]; then
	echo "stage: the binaries need GLIBC_$glibc, above $max_glibc: build on an older system" >&2
	exit 1
fi

raw=$(du -sb "$stage" | cut -f1)
rm -rf "$kit"
mkdir -p "$kit"
# One xz stream with a 64 MiB window, so that the code the binaries share
# compresses once; the fastest preset: measured on this kit, -9 took 119
# CPU s for 25.9 MB, preset 1 with the same window 22 CPU s for 28.7 MB.
echo "stage: compressing $((raw / 1048576)) MiB"
tar -C "$stage" -cf - . | xz -T1 --lzma2=preset=1,dict=64MiB >"$kit/kit.tar.xz"
cp bench/gpukit/run.sh "$kit/run.sh"
size=$(du -sb "$kit" | cut -f1)
{
	echo "grpokit GPU kit"
	echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
	echo "go: $(go version)"
	echo "built on: $(ldd --version 2>&1 | head -1)"
	echo "glibc symbol versions required: up to GLIBC_$glibc"
	echo "packages tested: $(echo $packages)"
	echo "unpacked: $raw bytes; folder: $size bytes"
	(cd "$stage" && find . -type f -size +1M -printf '%s\t%p\n' | sort -rn)
} >"$kit/MANIFEST.txt"
echo "stage: $kit: $size bytes ($((size / 1048576)) MiB; limit $max_mb MiB), in $((SECONDS - start)) s"
if [ "$size" -gt $((max_mb * 1048576)) ]; then
	echo "stage: $kit is over $max_mb MiB" >&2
	exit 1
fi
