#!/usr/bin/env python3
"""PyTorch side of bench/run.sh: times the same float32 products as
bench/matmul (same names, same layouts) and writes JSON
{"info": ..., "gflops": {name: best GFLOP/s}} to stdout.

Uses torch.set_num_threads(THREADS, default 2). Not used by tests or CI.
"""
import json
import os
import platform
import sys
import time

import torch

from blasinfo import torch_build_info

MIN_TIME = float(os.environ.get("BENCH_TIME", "1.0"))
THREADS = int(os.environ.get("THREADS", "2"))
# CLOCK=cpu divides by the process's CPU time instead of wall time: with
# THREADS=1 on a shared machine that leaves out the time other processes
# hold the core (compare with `go test -bench . ./internal/gemm
# -gemm.threads 1`, metric GFLOP/cpu-s).
CLOCK = time.process_time if os.environ.get("CLOCK") == "cpu" else time.perf_counter


def shapes():
    """(name, make_inputs, fn, flops); mirrors shapes() in bench/matmul/main.go."""
    out = []

    def mk(name, m, k, n, bt):
        def make():
            a = torch.randn(m, k)
            b = torch.randn(n, k) if bt else torch.randn(k, n)
            return a, b
        fn = (lambda a, b: a @ b.t()) if bt else (lambda a, b: a @ b)
        out.append((name, make, fn, 2 * m * k * n))

    mk("256x576 · 576x1536", 256, 576, 1536, False)
    mk("1024x576 · 576x1536", 1024, 576, 1536, False)
    mk("8x576 · 576x1536 (decode)", 8, 576, 1536, False)
    mk("1024x576 · 576x49152 (LM head)", 1024, 576, 49152, False)
    mk("256x576 · (1536x576)ᵀ", 256, 576, 1536, True)
    mk("8x576 · (1536x576)ᵀ (decode)", 8, 576, 1536, True)
    mk("1024x576 · (49152x576)ᵀ (LM head)", 1024, 576, 49152, True)
    out.append(("(1440x576)ᵀ · 1440x1536 (weight grad)",
                lambda: (torch.randn(1440, 576), torch.randn(1440, 1536)),
                lambda a, b: a.t() @ b, 2 * 576 * 1440 * 1536))
    out.append(("144x90x64 · (144x90x64)ᵀ (attention)",
                lambda: (torch.randn(144, 90, 64), torch.randn(144, 90, 64)),
                lambda a, b: torch.bmm(a, b.transpose(1, 2)), 2 * 144 * 90 * 90 * 64))
    return out


def time_it(flops, fn):
    fn()
    fn()
    times = []
    start = time.perf_counter()
    while len(times) < 5 or time.perf_counter() - start < MIN_TIME:
        t0 = CLOCK()
        fn()
        times.append(CLOCK() - t0)
    return flops / min(times) / 1e9


def main():
    torch.set_num_threads(THREADS)
    res = {}
    with torch.no_grad():
        for name, make, fn, flops in shapes():
            a, b = make()
            res[name] = time_it(flops, lambda: fn(a, b))
            print(f"torch {name}: {res[name]:.1f} GFLOP/s", file=sys.stderr)
    clock = "CPU time" if CLOCK is time.process_time else "wall time"
    info = f"torch {torch.__version__}, {torch.get_num_threads()} threads, {clock}, python {platform.python_version()}, {torch_build_info(torch)}"
    json.dump({"info": info, "gflops": res}, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
