#!/bin/sh
# bench/decode.sh MODEL_DIR: prefill and decode tokens/s of grpokit against
# llama.cpp built natively from llama-cpp-python's source, on the F32 and
# the F16 GGUF of the same weights (written by grpokit export), at batch 1, 8
# and 32 (BATCH), 64 prompt and 64 new tokens a sequence. llama.cpp runs with
# 1 and 2 threads and keeps the faster (THREADS); grpokit with GOMAXPROCS.
#
# The first run builds llama-cpp-python==0.3.36 with CMAKE_ARGS=-DGGML_NATIVE=ON
# into $LLAMA_VENV (default ~/.cache/grpokit/llama-venv; about 8 minutes on
# 2 cores, 100 MB); pip keeps the wheel, so a new venv reinstalls it at once.
set -eu
cd "$(dirname "$0")/.."
model=${1:?usage: bench/decode.sh MODEL_DIR}
venv=${LLAMA_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/grpokit/llama-venv}
if ! "$venv/bin/python" -c "import llama_cpp, numpy" 2>/dev/null; then
	echo "bench: building llama-cpp-python==0.3.36 from source into $venv (CMAKE_ARGS=-DGGML_NATIVE=ON)" >&2
	"${BENCH_BASE_PYTHON:-python3.11}" -m venv "$venv"
	CMAKE_ARGS="-DGGML_NATIVE=ON" "$venv/bin/pip" install --quiet numpy llama-cpp-python==0.3.36 >&2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/grpokit" ./cmd/grpokit
go build -o "$tmp/decode" ./bench/decode
batch=${BATCH:-1,8,32}
for d in F32 F16; do
	"$tmp/grpokit" export -model "$model" -dtype "$d" -out "$tmp/model-$d.gguf" -modelfile "" >&2
	echo
	"$venv/bin/python" bench/llamacpp_decode.py "$tmp/model-$d.gguf" --batch "$batch" --json "$tmp/llama-$d.json" 2>/dev/null
	"$tmp/decode" -model "$tmp/model-$d.gguf" -batch "$batch" -llama "$tmp/llama-$d.json"
	rm -f "$tmp/model-$d.gguf"
done
