#!/bin/sh
# bench/run.sh: grpokit's pure-Go matrix products (and, with "model", the
# whole-model workloads) side by side with PyTorch on this machine.
#
#   bench/run.sh            # matmul table
#   bench/run.sh model      # also prefill / decode / GRPO forward+backward
#   bench/run.sh grpostep   # whole GRPO steps (variable-length, LoRA,
#                           # generation-heavy, full), then one ratio line
#                           # per variant; last line: grpostep ratio: X.XX×
#                           # (the full step's)
#
# Installs Debian's python3-torch if it is missing (needs apt and root).
# PyTorch runs at its best: on an AVX-512 CPU OpenBLAS is told to use its
# AVX-512 kernels (OPENBLAS_CORETYPE=SkylakeX; it picks Haswell's by default
# on AMD Zen 4/5, about 2× slower), even when the environment exports another
# core type (an inherited OPENBLAS_CORETYPE=Haswell would slow PyTorch down);
# BENCH_OPENBLAS_CORETYPE=X forces X.
# Environment: BENCH_TIME (seconds per shape, default 1), THREADS (torch
# threads, default 2; Go uses GOMAXPROCS), PYTHON (an interpreter with torch),
# STEPS (timed steps of every grpostep variant after its first; default 3
# for full and lora, 1 for genheavy and varlen, so that the four variants
# fit in about 13 minutes on a quiet 2-core machine), STEPS_<variant> (the
# same for one variant, e.g. STEPS_varlen=3; it wins over STEPS), VARIANTS
# (grpostep variants, default "varlen lora genheavy full"), COMPARE=0 (varlen
# without its generation with finished rows kept), TINY=1 (grpostep on a
# tiny model: a smoke test of the whole pipeline in seconds),
# DECODE=1 (genheavy also times one decode step at batch 32 on both sides,
# against the memory-bandwidth bound), CHECKPOINTING=1 (grpokit recomputes each layer in the backward pass, as
# grpo.Config's default does; by default both sides keep their
# activations, so they run the same products).
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
if [ -n "${BENCH_OPENBLAS_CORETYPE:-}" ]; then
	export OPENBLAS_CORETYPE=$BENCH_OPENBLAS_CORETYPE
elif grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
	if [ -n "${OPENBLAS_CORETYPE:-}" ] && [ "$OPENBLAS_CORETYPE" != SkylakeX ]; then
		echo "bench: OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE from the environment replaced by SkylakeX (AVX-512 CPU; BENCH_OPENBLAS_CORETYPE overrides)" >&2
	fi
	export OPENBLAS_CORETYPE=SkylakeX
fi
echo "bench: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset (OpenBLAS picks the kernels)}" >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t=${BENCH_TIME:-1}
case "${1:-}" in
grpostep)
	# Each side in its own process (peak RSS is per process), PyTorch first.
	go build -o "$tmp/grpostep" ./bench/grpostep
	variants=${VARIANTS:-varlen lora genheavy full}
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
		VARIANT=$v STEPS=$n DECODE=${DECODE:-0} "$PY" bench/torch_grpostep.py >"$tmp/torch_$v.json"
		compare=true
		ckpt=false
		[ "${CHECKPOINTING:-0}" != 1 ] || ckpt=true
		[ "${COMPARE:-1}" != 0 ] || compare=false
		{
			"$tmp/grpostep" -variant "$v" -steps "$n" ${TINY:+-tiny} -compare="$compare" -gradient-checkpointing="$ckpt" -decode="$decode" -torch "$tmp/torch_$v.json"
			echo $? >"$tmp/rc"
		} | tee "$tmp/go_$v.txt"
		[ "$(cat "$tmp/rc")" = 0 ] || exit 1
	done
	# One line per variant, the full step's last.
	echo
	for v in $variants; do
		[ "$v" = full ] || grep '^grpostep ratio' "$tmp/go_$v.txt" | tail -n 1
	done
	for v in $variants; do
		[ "$v" != full ] || grep '^grpostep ratio' "$tmp/go_$v.txt" | tail -n 1
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
