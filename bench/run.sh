#!/bin/sh
# bench/run.sh: grpokit's pure-Go matrix products (and, with "model", the
# whole-model workloads) side by side with PyTorch on this machine.
#
#   bench/run.sh          # matmul table
#   bench/run.sh model    # also prefill / decode / GRPO forward+backward
#
# Installs Debian's python3-torch if it is missing (needs apt and root).
# Environment: BENCH_TIME (seconds per shape, default 1), THREADS (torch
# threads, default 2; Go uses GOMAXPROCS), PYTHON (an interpreter with torch).
set -eu
cd "$(dirname "$0")/.."
# Debian's torch lives in /usr/bin/python3, which a pyenv python3 hides.
PY=${PYTHON:-}
if [ -z "$PY" ]; then
	for p in python3 /usr/bin/python3; do
		if "$p" -c 'import torch' 2>/dev/null; then PY=$p; break; fi
	done
fi
if [ -z "$PY" ]; then
	echo "bench: installing python3-torch with apt-get" >&2
	apt-get install -y python3-torch >/dev/null
	PY=/usr/bin/python3
fi
# Without OpenBLAS, Debian's torch falls back to the reference BLAS and runs
# ~30× slower, which would make the comparison meaningless.
if ! ldconfig -p | grep -q libopenblas; then
	echo "bench: installing libopenblas0-pthread with apt-get" >&2
	apt-get install -y libopenblas0-pthread >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t=${BENCH_TIME:-1}
"$PY" bench/torch_matmul.py >"$tmp/torch.json"
go run ./bench/matmul -torch "$tmp/torch.json" -time "${t}s"
if [ "${1:-}" = model ]; then
	echo
	"$PY" bench/torch_model.py >"$tmp/torch_model.json"
	go run ./bench/model -torch "$tmp/torch_model.json"
fi
