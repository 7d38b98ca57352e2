#!/usr/bin/env python3
"""PyTorch side of `bench/run.sh model`: a plain Llama (SmolLM2-135M shapes,
random float32 weights, tied embeddings) timed on the same workloads as
bench/model:

  prefill  forward to logits of 8 sequences x 128 tokens
  decode   one KV-cache decode step at batch 8 (greedy), from 16-token prompts
  fwdbwd   sum of token log-probs of 16 x 90 tokens and its gradient w.r.t.
           every weight

BLAS_THREADS (default 1): OpenBLAS's own threads beside torch's THREADS
(default 2) OpenMP threads. On a 2-core machine OpenBLAS's default pool of
2 spins against torch's threads: prefill and fwdbwd took 1.1-1.4x longer
and decode 3-7x longer than with one OpenBLAS thread.

Writes JSON {"info": ..., "seconds": {workload: best seconds}} to stdout.
Python + torch only; never used by tests or CI.
"""
import json
import math
import os
import platform
import sys
import time

import torch
import torch.nn.functional as F

from blasinfo import set_openblas_threads, torch_build_info

REPS = int(os.environ.get("REPS", "3"))
THREADS = int(os.environ.get("THREADS", "2"))
BLAS_THREADS = int(os.environ.get("BLAS_THREADS", "1"))
V, H, I, L, NH, NKV, HD = 49152, 576, 1536, 30, 9, 3, 64
EPS, THETA = 1e-5, 100000.0
PREFILL_B, PREFILL_T = 8, 128
DECODE_B, PROMPT_T, DECODE_STEPS = 8, 16, 16
GRAD_B, GRAD_T = 16, 90


class Llama(torch.nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(1)
        p = lambda *s: torch.nn.Parameter(torch.randn(*s, generator=g) * 0.02)
        self.embed = p(V, H)
        self.layers = torch.nn.ModuleList()
        for _ in range(L):
            m = torch.nn.Module()
            m.q, m.k, m.v, m.o = p(NH * HD, H), p(NKV * HD, H), p(NKV * HD, H), p(H, NH * HD)
            m.gate, m.up, m.down = p(I, H), p(I, H), p(H, I)
            m.n1, m.n2 = torch.nn.Parameter(torch.ones(H)), torch.nn.Parameter(torch.ones(H))
            self.layers.append(m)
        self.norm = torch.nn.Parameter(torch.ones(H))
        inv = 1.0 / (THETA ** (torch.arange(0, HD, 2, dtype=torch.float64) / HD))
        self.register_buffer("inv_freq", inv.float(), persistent=False)

    @staticmethod
    def rms(x, w):
        return w * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)

    def rope(self, x, pos):  # x [B, h, T, HD], pos [B, T]
        f = pos[:, None, :, None].float() * self.inv_freq  # [B,1,T,HD/2]
        emb = torch.cat([f, f], -1)
        cos, sin = emb.cos(), emb.sin()
        x1, x2 = x[..., : HD // 2], x[..., HD // 2:]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    def forward(self, ids, pos, cache=None):
        """ids, pos [B, T]; cache: list of (k, v) per layer or None. Returns logits, new cache."""
        B, T = ids.shape
        h = self.embed[ids]
        new_cache = []
        for i, m in enumerate(self.layers):
            x = self.rms(h, m.n1)
            q = (x @ m.q.t()).view(B, T, NH, HD).transpose(1, 2)
            k = (x @ m.k.t()).view(B, T, NKV, HD).transpose(1, 2)
            v = (x @ m.v.t()).view(B, T, NKV, HD).transpose(1, 2)
            q, k = self.rope(q, pos), self.rope(k, pos)
            if cache is not None:
                k = torch.cat([cache[i][0], k], 2)
                v = torch.cat([cache[i][1], v], 2)
            new_cache.append((k, v))
            kr = k.repeat_interleave(NH // NKV, 1)
            vr = v.repeat_interleave(NH // NKV, 1)
            s = q @ kr.transpose(2, 3) / math.sqrt(HD)
            S = kr.shape[2]
            causal = torch.ones(T, S, dtype=torch.bool).tril(S - T)
            s = s.masked_fill(~causal, float("-inf"))
            a = (s.softmax(-1) @ vr).transpose(1, 2).reshape(B, T, NH * HD)
            h = h + a @ m.o.t()
            x = self.rms(h, m.n2)
            h = h + (F.silu(x @ m.gate.t()) * (x @ m.up.t())) @ m.down.t()
        return self.rms(h, self.norm) @ self.embed.t(), new_cache


def batch(b, t):
    i = torch.arange(b * t)
    ids = ((i * 7919 + 13) % V).view(b, t)
    pos = (i % t).view(b, t)
    return ids, pos


def best_time(f, reps=REPS):
    f()  # warm-up
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def main():
    torch.set_num_threads(THREADS)
    torch.ones(8, 8) @ torch.ones(8, 8)  # loads OpenBLAS, so that its pool can be sized
    set_openblas_threads(BLAS_THREADS)
    model = Llama()
    res = {}

    ids, pos = batch(PREFILL_B, PREFILL_T)
    with torch.no_grad():
        res["prefill"] = best_time(lambda: model(ids, pos))
    print(f"torch prefill: {res['prefill']:.3f}s", file=sys.stderr)

    prompts, ppos = batch(DECODE_B, PROMPT_T)

    def generate(n):
        with torch.no_grad():
            logits, cache = model(prompts, ppos)
            tok = logits[:, -1].argmax(-1, keepdim=True)
            for s in range(n - 1):
                p = torch.full((DECODE_B, 1), PROMPT_T + s)
                logits, cache = model(tok, p, cache)
                tok = logits[:, -1].argmax(-1, keepdim=True)

    def step():
        t0 = time.perf_counter()
        generate(1)
        t1 = time.perf_counter()
        generate(1 + DECODE_STEPS)
        t2 = time.perf_counter()
        return ((t2 - t1) - (t1 - t0)) / DECODE_STEPS

    step()
    res["decode"] = min(step() for _ in range(REPS))
    print(f"torch decode step: {res['decode']:.4f}s", file=sys.stderr)

    ids, pos = batch(GRAD_B, GRAD_T)

    def fwd_bwd():
        model.zero_grad(set_to_none=True)
        logits, _ = model(ids, pos)
        lp = logits.log_softmax(-1).gather(-1, ids[..., None]).sum()  # as bench/model: targets = ids
        lp.backward()

    res["fwdbwd"] = best_time(fwd_bwd)
    print(f"torch fwd+bwd: {res['fwdbwd']:.3f}s", file=sys.stderr)
    info = f"torch {torch.__version__}, {torch.get_num_threads()} threads (OpenBLAS {BLAS_THREADS}), python {platform.python_version()}, {torch_build_info(torch)}"
    json.dump({"info": info, "seconds": res}, sys.stdout)


if __name__ == "__main__":
    main()
