#!/usr/bin/env bash
# The GPU kit's device command (staged by bench/gpukit/stage.sh into
# .gpukit/, which holds this script beside kit.tar.xz):
#
#   bash .gpukit/run.sh             # on a machine with an NVIDIA GPU: xla:cuda
#   bash .gpukit/run.sh --dry-run   # anywhere: the pure-Go backend, tiny sizes
#
# It unpacks the kit (no Go needed), makes the CUDA PJRT plugin of JAX's
# Python wheel loadable by go-xla (a pjrt_c_api_cuda_plugin.so link in a
# folder named by PJRT_PLUGIN_LIBRARY_PATH, XLA_FLAGS'
# --xla_gpu_cuda_data_dir, the wheels' NVIDIA libraries on
# LD_LIBRARY_PATH), prints the versions, then runs each step under its own
# time limit, so that one failure or hang cannot eat the others:
#
#   golden   the golden tests (tests.txt) on the backend, f32 and bf16
#   decode   decode tokens/s at batch 64 against the memory-bandwidth bound
#   grpo     a GRPO step (8 prompts × G=8, 256 sampled tokens) at the
#            Qwen2.5-0.5B shape with random bf16 weights, LoRA and full,
#            beside a transformers + PEFT loop doing the same step
#   poker    examples/poker for a few hundred steps: reward curve, steps/s
#
# Results go to $OUT (a new temporary folder when unset): summary.md (the
# versions and one table), steps.tsv, golden.log, bench.log, hf.log,
# poker.log and poker-metrics.jsonl. The whole run stays within
# GPUKIT_BUDGET seconds of steps (default 430; about 7.5 minutes with the
# setup). GPUKIT_WORK is where the kit unpacks (default: a temporary folder).
set -uo pipefail
kit=$(cd "$(dirname "$0")" && pwd)
dry=0
case "${1:-}" in
--dry-run) dry=1 ;;
"") ;;
*)
	echo "usage: bash $0 [--dry-run]" >&2
	exit 2
	;;
esac
T0=$SECONDS
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
if [ -n "${GPUKIT_WORK:-}" ]; then
	work=$GPUKIT_WORK
	mkdir -p "$work"
else
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
fi
budget=${GPUKIT_BUDGET:-430}
[ $dry = 1 ] && budget=${GPUKIT_BUDGET:-1800}
summary=$OUT/summary.md
steps=$OUT/steps.tsv
: >"$steps"

say() { echo "gpukit: $*" | tee -a "$summary"; }
record() { # name, status, seconds, result
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$steps"
	echo "gpukit: [$1] $2 in $3 s: $4"
}
# limit WANT: the seconds a step may take, WANT or what is left of the budget.
limit() {
	local left=$((budget - (SECONDS - T0)))
	if [ "$left" -lt "$1" ]; then echo "$left"; else echo "$1"; fi
}
# step NAME WANT LOG CMD...: runs CMD (in the folder $stepdir, default the
# current one) with its own time limit, output appended to LOG; sets
# status, took and rc.
step() {
	local name=$1 want=$2 log=$3 t s
	shift 3
	t=$(limit "$want")
	if [ "$t" -lt 5 ]; then
		status="skipped (budget spent)"
		took=0
		return 1
	fi
	echo "== $name (limit ${t} s): $*" >>"$log"
	s=$SECONDS
	(cd "${stepdir:-.}" && timeout -k 5 "$t" "$@" </dev/null) >>"$log" 2>&1
	rc=$?
	took=$((SECONDS - s))
	case $rc in
	0) status=ok ;;
	124 | 137) status="timeout (${t} s)" ;;
	*) status="failed (exit $rc)" ;;
	esac
	echo "== $name: $status in $took s" >>"$log"
	return $rc
}

{
	echo "# grpokit GPU kit: $([ $dry = 1 ] && echo 'CPU dry run' || echo 'device run')"
	echo
	echo '```'
} >"$summary"
say "kit $kit, work $work, out $OUT, budget $budget s"
[ -f "$kit/MANIFEST.txt" ] && sed -n '1,5p' "$kit/MANIFEST.txt" | tee -a "$summary"
# The folder must travel to the device with the working tree (64 MiB in all).
size=$(du -sb "$kit" | cut -f1)
say "kit folder: $size bytes (limit ${GPUKIT_MAX_MB:-40} MiB)"
if [ "$size" -gt $((${GPUKIT_MAX_MB:-40} * 1048576)) ]; then
	say "the kit folder is over ${GPUKIT_MAX_MB:-40} MiB"
	exit 1
fi

# Unpack: tar's xz if there is one, else Python's tarfile.
if command -v xz >/dev/null 2>&1; then
	tar -C "$work" -xJf "$kit/kit.tar.xz"
else
	python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$kit/kit.tar.xz" "$work"
fi || {
	say "cannot unpack $kit/kit.tar.xz"
	exit 1
}
bin=$work/bin
say "unpacked in $((SECONDS - T0)) s"

# The backend and its plugin.
py=$(command -v python3 || true)
if [ $dry = 1 ]; then
	export GOMLX_BACKEND=${GPUKIT_BACKEND:-go}
else
	# JAX's CUDA PJRT plugin: jax_plugins/<name>/xla_cuda_plugin.so in the
	# Python that holds jax (the image's python3), else anywhere under /opt,
	# /usr or the home folder.
	plugin=""
	if [ -n "$py" ]; then
		plugin=$("$py" - <<-'EOF' 2>/dev/null
			import glob, os
			try:
			    import jax_plugins
			    paths = list(jax_plugins.__path__)
			except Exception:
			    paths = []
			import site, sysconfig
			paths += [os.path.join(p, "jax_plugins") for p in site.getsitepackages() + [sysconfig.get_paths()["purelib"]]]
			for p in paths:
			    for f in sorted(glob.glob(os.path.join(p, "*", "xla_cuda_plugin.so"))):
			        print(os.path.realpath(f))
			        raise SystemExit
		EOF
		)
	fi
	if [ -z "$plugin" ]; then
		plugin=$(find /opt /usr /root -name xla_cuda_plugin.so -path '*jax_plugins*' 2>/dev/null | head -1)
	fi
	if [ -z "$plugin" ]; then
		say "no xla_cuda_plugin.so (jax-cuda13-pjrt) found: cannot run on the GPU"
		exit 1
	fi
	site=$(dirname "$(dirname "$(dirname "$plugin")")") # …/site-packages
	mkdir -p "$work/pjrt"
	ln -sf "$plugin" "$work/pjrt/pjrt_c_api_cuda_plugin.so"
	export PJRT_PLUGIN_LIBRARY_PATH=$work/pjrt
	# The NVIDIA wheels' libraries (nvidia/<lib>/lib, or CUDA 13's
	# nvidia/cu13/lib): the plugin's RPATH ($ORIGIN/../nvidia/…) does not
	# hold through the link.
	libs=$(find "$site/nvidia" -maxdepth 3 -type d \( -name lib -o -name lib64 \) 2>/dev/null | sort | paste -sd: -)
	export LD_LIBRARY_PATH=${libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	# XLA's CUDA data folder (nvvm/libdevice and bin/ptxas): set here, or
	# go-xla would name a folder from its author's machine.
	libdevice=$(find "$site/nvidia" /usr/local/cuda* -name 'libdevice.10.bc' 2>/dev/null | head -1)
	cudadir=""
	[ -n "$libdevice" ] && cudadir=$(dirname "$(dirname "$(dirname "$libdevice")")")
	if [ -n "$cudadir" ]; then
		export XLA_FLAGS="--xla_gpu_cuda_data_dir=$cudadir${XLA_FLAGS:+ $XLA_FLAGS}"
		[ -d "$cudadir/bin" ] && export PATH=$cudadir/bin:$PATH
	else
		say "no libdevice.10.bc found under $site/nvidia or /usr/local/cuda*: XLA_FLAGS left as it was"
	fi
	# ptxas, wherever it is (XLA also looks on PATH).
	ptxas=$(find "$site/nvidia" /usr/local/cuda* -name ptxas -type f 2>/dev/null | head -1)
	[ -n "$ptxas" ] && export PATH=$(dirname "$ptxas"):$PATH
	say "libdevice: ${libdevice:-none}; ptxas: ${ptxas:-none}"
	export GOMLX_BACKEND=${GPUKIT_BACKEND:-xla:cuda}
	# The trainer's memory plan checks host memory; the model lives on the GPU.
	export GRPOKIT_MEMORY_LIMIT=off
	say "plugin $plugin → $work/pjrt/pjrt_c_api_cuda_plugin.so"
	say "XLA_FLAGS=${XLA_FLAGS:-}"
	say "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
fi

# Versions.
if command -v nvidia-smi >/dev/null 2>&1; then
	say "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | head -1)"
else
	say "GPU: none (no nvidia-smi)"
fi
if [ -n "$py" ]; then
	say "python: $("$py" - <<-'EOF' 2>&1
		import importlib.metadata as m, sys
		out = [sys.version.split()[0]]
		for p in ["jax", "jaxlib", "jax-cuda13-pjrt", "jax-cuda13-plugin", "torch", "transformers", "peft"]:
		    try:
		        out.append(f"{p} {m.version(p)}")
		    except Exception:
		        out.append(f"{p} -")
		print(", ".join(out))
	EOF
	)"
fi
say "libc: $(ldd --version 2>&1 | head -1); the kit needs up to $(grep -o 'GLIBC_[0-9.]*' "$kit/MANIFEST.txt" 2>/dev/null | head -1)"
info=$(timeout -k 5 60 "$bin/gpukit" info 2>&1)
rc=$?
if [ $rc != 0 ] && [ $dry = 0 ] && [ -z "${GPUKIT_BACKEND:-}" ]; then
	# By name failed: go-xla also takes the plugin's absolute path.
	say "backend $GOMLX_BACKEND failed: $(echo "$info" | tail -3)"
	export GOMLX_BACKEND="xla:$plugin"
	info=$(timeout -k 5 60 "$bin/gpukit" info 2>&1)
	rc=$?
fi
echo "$info" | grep -v '^[IWE][0-9]\{4\} ' | tail -5 | while read -r l; do say "$l"; done
if [ $rc != 0 ]; then
	record info "failed (exit $rc)" "$((SECONDS - T0))" "backend $GOMLX_BACKEND: $(echo "$info" | tail -1)"
	say "the backend does not run; stopping"
	echo '```' >>"$summary"
	exit 1
fi
record info ok "$((SECONDS - T0))" "backend $GOMLX_BACKEND runs a checked product"

# Sizes: the device's, or tiny ones for the dry run.
if [ $dry = 1 ]; then
	cfg=$work/shared/golden/qwen2-tiny/config.json
	shape=(-prompts 2 -g 2 -prompt-len 8 -new-tokens 4)
	hfshape=(--prompts 2 --g 2 --prompt-len 8 --new-tokens 4 --steps 1 --dtype f32)
	gosteps=1
	decode=(-prompts 2 -g 2 -prompt-len 8 -new-tokens 4)
	pokerargs=(-steps 3 -time 2m -eval 18 -eval-every 0)
	dtype=f32
else
	cfg=$work/configs/Qwen2.5-0.5B-Instruct.json
	shape=(-prompts 8 -g 8 -prompt-len 64 -new-tokens 256 -micro-batch 16)
	hfshape=(--prompts 8 --g 8 --prompt-len 64 --new-tokens 256 --micro-batch 16 --steps 2 --dtype bf16)
	gosteps=2
	decode=(-prompts 8 -g 8 -prompt-len 64 -new-tokens 64)
	pokerargs=(-steps 300 -time 30s -eval 90 -eval-every 0)
	dtype=bf16
fi

# (a) Golden tests, one binary per line of tests.txt, in its package folder.
while read -r pkg dt re; do
	case "$pkg" in '' | '#'*) continue ;; esac
	name="golden $pkg $dt"
	# The device's caps, by line (the model's f32 tests compile the most graphs).
	case "$pkg $dt" in
	"model f32") want=60 ;;
	"grpo f32") want=40 ;;
	*) want=30 ;;
	esac
	[ $dry = 1 ] && want=600
	log=$OUT/golden.log
	echo "==== $name: $re" >>"$log"
	mark=$(wc -l <"$log")
	t=$(limit "$want")
	stepdir=$work/repo/$pkg step "$name" "$want" "$log" "./$(basename "$pkg").test" -test.v -test.run "$re" -test.timeout "${t}s"
	tail -n +"$((mark + 1))" "$log" >"$work/golden.part"
	record "$name" "$status" "$took" "$("$bin/gpukit" golden "$work/golden.part" "$re" | tail -1)"
done <"$work/tests.txt"

# The model at the benchmark's shape, random bf16 weights.
mdir=$work/model-bench
log=$OUT/bench.log
step randomhf 30 "$log" "$bin/randomhf" -config "$cfg" -tokenizer "$work/shared/tokenizers" -tokenizer-prefix qwen3 -out "$mdir" -dtype bf16
record randomhf "$status" "$took" "$(grep '^wrote' "$log" | tail -1)"

# The memory bandwidth for the decode bound: a device-to-device copy
# through torch (bytes read + written), else the datasheet by GPU name.
bw=0
if [ $dry = 1 ]; then
	bw=10 # a nominal figure: the dry run checks the pipeline, not the bound
elif [ -n "$py" ]; then
	bw=$(timeout 60 "$py" - <<-'EOF' 2>>"$log"
		import torch
		x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda"); y = torch.empty_like(x)
		for _ in range(3): y.copy_(x)
		s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
		ts = []
		for _ in range(10):
		    s.record(); y.copy_(x); e.record(); e.synchronize(); ts.append(s.elapsed_time(e) / 1e3)
		ts.sort()
		print(round(2 * x.numel() / ts[len(ts) // 2] / 1e9))
	EOF
	) || bw=0
fi
if [ "${bw:-0}" = 0 ] && command -v nvidia-smi >/dev/null 2>&1; then
	case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
	*H200*) bw=4800 ;;
	*H100*) bw=3350 ;;
	esac
	say "memory bandwidth from the datasheet: $bw GB/s"
fi
say "memory bandwidth for the decode bound: ${bw:-0} GB/s"

# (d) Decode tokens/s at batch 64.
step decode 45 "$log" "$bin/grpostep" -model "$mdir" -dtype "$dtype" -variant genheavy -decodeonly "${decode[@]}" -bandwidth "$bw" -json "$work/decode.json"
res=$([ -f "$work/decode.json" ] && "$bin/gpukit" step "$work/decode.json" | grep -o 'decode at.*')
record decode "$status" "$took" "${res:-see bench.log}"

# (c) The GRPO step, grpokit then transformers + PEFT, LoRA then full.
hflog=$OUT/hf.log
for v in lora full; do
	want=80
	[ $v = full ] && want=65
	step "grpo $v" "$want" "$log" "$bin/grpostep" -model "$mdir" -dtype "$dtype" -variant "$v" "${shape[@]}" -steps "$gosteps" -json "$work/go_$v.json"
	gost=$status gotook=$took
	if [ -z "$py" ]; then
		echo "hf_grpostep: skipped: no python3" >>"$hflog"
		hfst="skipped (no python3)"
	else
		step "hf $v" 50 "$hflog" "$py" "$work/hf_grpostep.py" --model "$mdir" --variant "$v" "${hfshape[@]}" --json "$work/hf_$v.json"
		hfst=$status
		[ "$status" = "failed (exit 3)" ] && hfst="skipped: $(grep 'skipped' "$hflog" | tail -1)"
	fi
	res="see bench.log"
	if [ -f "$work/go_$v.json" ]; then
		if [ -f "$work/hf_$v.json" ]; then
			res=$("$bin/gpukit" step "$work/go_$v.json" "$work/hf_$v.json")
		else
			res=$("$bin/gpukit" step "$work/go_$v.json")
		fi
	fi
	record "grpo $v" "$gost" "$gotook" "$res"
	record "hf $v" "$hfst" "${took:-0}" "$(grep 'step median' "$hflog" | tail -1)"
done
for f in "$work"/go_*.json "$work"/hf_*.json "$work"/decode.json; do
	[ -f "$f" ] && { echo "== $(basename "$f")"; cat "$f"; } >>"$log"
done

# (b) The poker example (tiny model, constrained decoding) for a few hundred steps.
log=$OUT/poker.log
step poker 45 "$log" "$bin/poker" "${pokerargs[@]}" -out "$work/poker" -overwrite
pst=$status ptook=$took
cp "$work/poker/metrics.jsonl" "$OUT/poker-metrics.jsonl" 2>/dev/null
res=$("$bin/gpukit" poker "$work/poker/metrics.jsonl" 2>&1 | tail -1)
record poker "$pst" "$ptook" "$res"

# (e) The table.
{
	echo '```'
	echo
	echo "| step | status | s | result |"
	echo "|---|---|---|---|"
	awk -F'\t' '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }' "$steps"
	echo
	echo "Total $((SECONDS - T0)) s. Logs: golden.log, bench.log, hf.log, poker.log in $OUT."
} >>"$summary"
echo
sed -n '/^| step/,$p' "$summary"
failed=$(awk -F'\t' '$2 !~ /^(ok|skipped)/' "$steps" | wc -l)
echo "gpukit: $failed step(s) not ok"
[ "$failed" = 0 ]
