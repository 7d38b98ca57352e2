#!/usr/bin/env python3
"""PyTorch side of `bench/run.sh grpostep`: the GRPO step of bench/grpostep
in plain PyTorch, written the fast way (no HF, no TRL): a Llama with
SmolLM2-135M shapes (random float32 weights, tied embeddings), KV-cache
generation of exactly N new tokens (EOS masked out, as min_new_tokens),
per-token log-probs of the completions (the LM head only over them, as
TRL's logits_to_keep), the clipped GRPO loss (bnpo: sum over tokens /
tokens), backward, clip_grad_norm_(1.0) and AdamW.

  VARIANT=full      4 prompts x G=4, 80 prompt tokens, 6 new tokens, every weight
  VARIANT=lora      the same, LoRA r=16 (alpha 32) on every linear layer
  VARIANT=genheavy  4 prompts x G=8, 64 new tokens, micro-batches of 8;
                    with DECODE=1 also one decode step at batch 32
  VARIANT=varlen    the LoRA step with 4 prompts x G=4, micro-batches of 8,
                    completions sampled until EOS, which a fixed schedule
                    (varlen_schedule.py, the same as bench/grpostep's) puts
                    after 16-255 tokens; every row stays in the decode batch
                    until the last one ends, as in a plain HF-style loop
                    (finished rows are fed padding); the loss averages over
                    the real completion tokens (dapo). Also reports useful
                    (completion) tokens per second.

The first step is reported apart; medians over STEPS (default 3) more.
TINY=1 shrinks the model to bench/grpostep -tiny's shape (a smoke test).

COMPILE=1 runs the same step through torch.compile (inductor, which needs
a C++ compiler on CPU): the training micro-batch's forward + loss (and so
its backward, through AOTAutograd) and, unless COMPILE_DECODE=0, the model
calls of generation (prefill and decode, dynamic shapes: the KV cache
grows each token). clip_grad_norm_ and AdamW stay eager. Before the first
step a warm-up compiles every shape the steps will meet (varlen: each
step's completion length) on dummy tokens and a separate generator, so
the sampled tokens and the weights are those of the eager run; its time is
reported apart as "compile" and is in no step. Recompilations during the
steps, if any, are printed.

THREADS (default os.cpu_count()): torch's intra-op threads. With torch's
PyPI build (MKL for BLAS, oneDNN, one OpenMP pool) nothing else is set.
Only when the process runs OpenBLAS (Debian's torch) are its pool and the
decode threads juggled as tuned on that build: BLAS_THREADS (default 1)
sizes OpenBLAS's own pool beside torch's OpenMP threads, and
DECODE_THREADS (default 1 with OpenBLAS, else THREADS) is torch's threads
while decoding (see generate). On Debian's torch 1.13 + OpenBLAS on a
2-core machine the two pools spun against each other: the full step
(medians of steps 2-4) in six settings, fastest last: torch 2 + OpenBLAS 2
23.8 s, 1 + 2 22.9-27 s, 2 + 2 with OMP_WAIT_POLICY=PASSIVE 17.5-23 s,
2 + 1 with PASSIVE 14.6 s, 1 + 1 11.6-11.9 s, 2 + 1 9.4 s. Not re-measured
on torch 2.15 (MKL) beyond smoke runs.

Its first line on stderr names the torch, the mode (eager or compile), the
BLAS, oneDNN and ISA (torch.__config__.show(),
torch.backends.cpu.get_cpu_capability()) and the threads. Writes JSON
{"label", "info", "seconds": {...}, "memory": {"peak_rss_mb"}} to stdout
(label: "torch 2.15.0 eager" or "... compile"; info: that first line;
varlen: "seconds" also holds "tokens_per_s", completion tokens per second;
compile: "compile", the warm-up's seconds), progress to stderr. Python +
torch only; never used by tests or CI.
"""
import json
import math
import os
import platform
import resource
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from blasinfo import openblas_loaded, set_openblas_threads, torch_build_info
from varlen_schedule import scheduled_length

VARIANT = os.environ.get("VARIANT", "full")
STEPS = int(os.environ.get("STEPS", "3"))
THREADS = int(os.environ.get("THREADS") or os.cpu_count() or 1)
BLAS_THREADS = int(os.environ.get("BLAS_THREADS", "1"))  # OpenBLAS only
DECODE_THREADS = THREADS  # main sets it: DECODE_THREADS, else 1 with OpenBLAS
COMPILE = os.environ.get("COMPILE", "0") == "1"
COMPILE_DECODE = COMPILE and os.environ.get("COMPILE_DECODE", "1") != "0"
V, H, I, L, NH, NKV, HD = 49152, 576, 1536, 30, 9, 3, 64
if os.environ.get("TINY"):  # bench/grpostep -tiny's shape, for a smoke test
    V, H, I, L, NH, NKV, HD = 512, 64, 128, 2, 4, 2, 16
EPS, THETA, EOS, PAD = 1e-5, 100000.0, 2, 0
VARIANTS = {  # prompts, G, prompt tokens, new tokens, micro-batch rows, lora
    "full": (4, 4, 80, 6, 16, False),
    "lora": (4, 4, 80, 6, 16, True),
    "genheavy": (4, 8, 80, 64, 8, False),
    "varlen": (4, 4, 80, 256, 8, True),  # new tokens: at most
}
P, G, TP, C, MB, LORA = VARIANTS[VARIANT]
VARLEN = VARIANT == "varlen"
R, ALPHA = 16, 32
LR, CLIP_EPS, MAX_GRAD_NORM = 1e-6, 0.2, 1.0


class Linear(torch.nn.Module):
    """x @ W.T, plus LoRA's (x @ A.T) @ B.T * alpha/r when asked."""

    def __init__(self, out_f, in_f, g, lora):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(out_f, in_f, generator=g) * 0.02, requires_grad=not lora)
        self.lora = lora
        if lora:
            self.a = torch.nn.Parameter(torch.randn(R, in_f, generator=g) / math.sqrt(in_f))
            self.b = torch.nn.Parameter(torch.zeros(out_f, R))

    def forward(self, x):
        y = x @ self.w.t()
        if self.lora:
            y = y + (x @ self.a.t()) @ self.b.t() * (ALPHA / R)
        return y


class Llama(torch.nn.Module):
    def __init__(self, lora):
        super().__init__()
        g = torch.Generator().manual_seed(1)
        self.embed = torch.nn.Parameter(torch.randn(V, H, generator=g) * 0.02, requires_grad=not lora)
        self.layers = torch.nn.ModuleList()
        for _ in range(L):
            m = torch.nn.Module()
            m.q, m.k = Linear(NH * HD, H, g, lora), Linear(NKV * HD, H, g, lora)
            m.v, m.o = Linear(NKV * HD, H, g, lora), Linear(H, NH * HD, g, lora)
            m.gate, m.up, m.down = Linear(I, H, g, lora), Linear(I, H, g, lora), Linear(H, I, g, lora)
            m.n1 = torch.nn.Parameter(torch.ones(H), requires_grad=not lora)
            m.n2 = torch.nn.Parameter(torch.ones(H), requires_grad=not lora)
            self.layers.append(m)
        self.norm = torch.nn.Parameter(torch.ones(H), requires_grad=not lora)
        inv = 1.0 / (THETA ** (torch.arange(0, HD, 2, dtype=torch.float64) / HD))
        self.register_buffer("inv_freq", inv.float(), persistent=False)

    @staticmethod
    def rms(x, w):
        return w * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)

    def rope(self, x, pos):  # x [B, h, T, HD], pos [B, T]
        f = pos[:, None, :, None].float() * self.inv_freq
        emb = torch.cat([f, f], -1)
        x1, x2 = x[..., : HD // 2], x[..., HD // 2:]
        return x * emb.cos() + torch.cat([-x2, x1], -1) * emb.sin()

    def forward(self, ids, pos, allowed, cache=None, keep=None, start=0):
        """ids, pos [B, T]; allowed [B, T, S] bool. cache: per layer (K, V)
        [B, NKV, S_max, HD] tensors that this call writes in place at
        [start, start+T) and attends over [0, start+T) (no copy of the past
        per step), or None (the prompt alone). Returns the logits of the last
        `keep` positions (all when None) and the per-layer (k, v) of the
        positions attended."""
        B, T = ids.shape
        grp = NH // NKV
        h = self.embed[ids]
        # Grouped-query attention without repeating K and V: the grp query
        # heads of a KV head are stacked along the rows ([B, NKV, grp*T, HD])
        # and share one product; head h uses KV head h // grp, as
        # repeat_interleave would.
        mask = allowed[:, None].expand(B, grp, T, allowed.shape[-1]).reshape(B, 1, grp * T, -1)
        new_cache = []
        for i, m in enumerate(self.layers):
            x = self.rms(h, m.n1)
            q = m.q(x).view(B, T, NH, HD).transpose(1, 2)
            k = m.k(x).view(B, T, NKV, HD).transpose(1, 2)
            v = m.v(x).view(B, T, NKV, HD).transpose(1, 2)
            q, k = self.rope(q, pos), self.rope(k, pos)
            if cache is not None:
                K, Vc = cache[i]
                K[:, :, start:start + T] = k
                Vc[:, :, start:start + T] = v
                k, v = K[:, :, :start + T], Vc[:, :, :start + T]
            new_cache.append((k, v))
            qg = q.reshape(B, NKV, grp * T, HD)
            s = (qg @ k.transpose(2, 3)) / math.sqrt(HD)
            s = s.masked_fill(~mask, float("-inf"))
            a = (s.softmax(-1) @ v).view(B, NH, T, HD).transpose(1, 2).reshape(B, T, NH * HD)
            h = h + m.o(a)
            x = self.rms(h, m.n2)
            h = h + m.down(F.silu(m.gate(x)) * m.up(x))
        if keep is not None:
            h = h[:, -keep:]
        return self.rms(h, self.norm) @ self.embed.t(), new_cache


def prompt_ids(i):
    g = torch.Generator().manual_seed(1000 + i)
    return torch.randint(3, V, (TP,), generator=g)


@torch.no_grad()
def generate(model, prompts, g, n, gen, lengths=None):
    """Samples n tokens (temperature 1, EOS masked) for each of g copies of
    each prompt [P, TP]: prefill once, repeat the cache g times, decode.
    With lengths [P*g] (varlen), row i ends with EOS after lengths[i]
    tokens and is fed padding after that; n is max(lengths)."""
    p = prompts.shape[0]
    pos = torch.arange(TP).expand(p, TP)
    causal = torch.ones(TP, TP, dtype=torch.bool).tril().expand(p, TP, TP)
    logits, prefix = model(prompts, pos, causal, keep=1)
    # One preallocated cache per layer for all n steps, the prompt's part
    # repeated for the g copies once; each decode step writes one slot.
    cache = []
    for k, v in prefix:
        K = k.new_empty(p * g, NKV, TP + n, HD)
        Vc = v.new_empty(p * g, NKV, TP + n, HD)
        K[:, :, :TP] = k.repeat_interleave(g, 0)
        Vc[:, :, :TP] = v.repeat_interleave(g, 0)
        cache.append((K, Vc))
    logits = logits[:, -1].repeat_interleave(g, 0)
    out = []
    # With OpenBLAS (Debian's torch 1.13), decode runs on one thread,
    # torch's and OpenBLAS's (DECODE_THREADS=n changes it). Profiled at batch 32 (torch.profiler, load 5-12 on this
    # 2-core Zen 5): with 2 torch (OpenMP) threads and OpenBLAS's own 2
    # pthreads, the two pools spin against each other on 2 cores and every
    # small op waits (a [32, 1, 1536] mul took 1.7 ms): 1.13-1.29 s per step;
    # OpenBLAS on 1 thread 264-340 ms; torch on 1 thread with OpenBLAS on 2
    # 0.9-1.4 s (OpenBLAS's threaded sgemm at M = 32 loses more in wake-ups
    # than it gains); both on 1 thread 235-292 ms wall, 230-280 CPU ms. Not
    # the causes: x @ W.t() on the 3-D activations folds into one 2-D mm
    # like F.linear, and pre-transposed contiguous weights gained nothing
    # end to end (232 vs 235 ms). What remains per step: the products at
    # ~100 GFLOP/s on one core (the LM head ~48 ms), and sampling ~65 ms:
    # multinomial's exponential_ over [32, 49152] draws from the serial CPU
    # generator (~39 ms) and softmax ~27 ms; both are kept, as they fix the
    # sampled tokens given the seed. Tokens and logits are bit for bit those
    # of any thread setting here.
    # With MKL (torch's PyPI build) there is one pool and DECODE_THREADS
    # defaults to THREADS: nothing changes.
    nt = DECODE_THREADS
    old_t = torch.get_num_threads()
    torch.set_num_threads(nt)
    old_b = set_openblas_threads(nt) if openblas_loaded(torch) else None
    try:
        return _decode(model, logits, cache, p, g, n, gen, out, lengths)
    finally:
        torch.set_num_threads(old_t)
        if old_b:
            set_openblas_threads(old_b)


def _decode(model, logits, cache, p, g, n, gen, out, lengths=None):
    for s in range(n):
        logits[:, EOS] = float("-inf")  # min_new_tokens = n; varlen: no EOS before a row's end
        tok = torch.multinomial(logits.softmax(-1), 1, generator=gen)
        if lengths is not None:
            tok[lengths == s + 1] = EOS  # the row's scheduled end
            tok[lengths <= s] = PAD  # a finished row, still decoded
        out.append(tok)
        if s == n - 1:
            break
        S = TP + s + 1
        allowed = torch.ones(p * g, 1, S, dtype=torch.bool)
        logits, _ = model(tok, torch.full((p * g, 1), TP + s), allowed, cache, start=TP + s)
        logits = logits[:, -1]
    return torch.cat(out, 1)  # [P*G, n]


def rewards_of(completions, step):
    g = torch.Generator().manual_seed(step)
    return torch.rand(completions.shape[0], generator=g, dtype=torch.float64)


def micro_loss(model, tok, pos, causal, a, real, total_tokens):
    """The loss of one micro-batch tok [MB, TP+C] (its backward is the
    caller's): what COMPILE=1 compiles."""
    C = tok.shape[1] - TP
    logits, _ = model(tok, pos, causal, keep=C + 1)
    logits = logits[:, :-1]  # the C positions that predict the completion
    logp_all = logits.log_softmax(-1)
    logp = logp_all.gather(-1, tok[:, TP:, None]).squeeze(-1)  # [MB, C]
    with torch.no_grad():
        _entropy = -(logp_all.exp() * logp_all).sum(-1)  # logged by TRL
    old = logp.detach()  # num_iterations = 1
    ratio = torch.exp(logp - old)
    per_tok = -torch.min(ratio * a[:, None], ratio.clamp(1 - CLIP_EPS, 1 + CLIP_EPS) * a[:, None])
    return (per_tok * real).sum() / total_tokens  # bnpo / dapo


def train(loss_fn, opt, params, prompts, completions, adv, lengths=None):
    """One optimizer step over micro-batches of MB rows; loss_fn is
    micro_loss without its model (compiled or not). With lengths (varlen)
    the completions [N, C] are right-padded to the longest, and only each
    row's first lengths[i] tokens count."""
    tokens = torch.cat([prompts.repeat_interleave(G, 0), completions], 1)  # [N, TP+C]
    N, T = tokens.shape
    C = completions.shape[1]
    real = torch.ones(N, C)
    if lengths is not None:
        real = (torch.arange(C)[None, :] < lengths[:, None]).float()
    pos = torch.arange(T).expand(MB, T)
    causal = torch.ones(T, T, dtype=torch.bool).tril().expand(MB, T, T)
    opt.zero_grad(set_to_none=True)
    total_tokens = real.sum()
    for s in range(0, N, MB):
        loss = loss_fn(tokens[s:s + MB], pos, causal, adv[s:s + MB], real[s:s + MB], total_tokens)
        loss.backward()
    torch.nn.utils.clip_grad_norm_(params, MAX_GRAD_NORM)
    opt.step()


def step_shape(k):
    """Step k's prompts [P, TP], scheduled lengths (varlen, else None) and
    new tokens."""
    prompts = torch.stack([prompt_ids(k * P + j) for j in range(P)])
    lengths, n = None, C
    if VARLEN:
        lengths = torch.tensor([scheduled_length(k * P + p, j) for p in range(P) for j in range(G)])
        n = int(lengths.max())
    return prompts, lengths, n


def warm_up(gen_model, loss_fn, opt, steps):
    """COMPILE=1: compiles what the steps 0..steps-1 will run, on dummy
    data: the training micro-batch at each of their completion lengths
    (forward and backward) and, with COMPILE_DECODE, a short generation
    from a generator of its own. Leaves the weights, the optimizer state and
    the sampling generator as they were; returns the seconds it took."""
    t0 = time.perf_counter()
    g = torch.Generator().manual_seed(7)
    for n in sorted({step_shape(k)[2] for k in range(steps)}):
        T = TP + n
        tok = torch.randint(3, V, (MB, T), generator=g)
        pos = torch.arange(T).expand(MB, T)
        causal = torch.ones(T, T, dtype=torch.bool).tril().expand(MB, T, T)
        real = torch.ones(MB, n)
        loss_fn(tok, pos, causal, torch.ones(MB), real, real.sum()).backward()
    opt.zero_grad(set_to_none=True)
    if COMPILE_DECODE:
        prompts, lengths, _ = step_shape(0)
        if lengths is not None:
            lengths = torch.full_like(lengths, 3)
        generate(gen_model, prompts, G, 4, g, lengths)
    return time.perf_counter() - t0


def graphs_compiled():
    """How many graphs dynamo has compiled so far in this process."""
    from torch._dynamo.utils import counters
    return counters["stats"]["unique_graphs"]


def step(gen_model, loss_fn, opt, params, k, gen):
    prompts, lengths, n = step_shape(k)
    c0 = time.process_time()
    t0 = time.perf_counter()
    completions = generate(gen_model, prompts, G, n, gen, lengths)
    t1 = time.perf_counter()
    r = rewards_of(completions, k)
    grp = r.view(P, G)
    adv = ((grp - grp.mean(1, keepdim=True)) / (grp.std(1, keepdim=True) + 1e-4)).view(-1).float()
    t2 = time.perf_counter()
    train(loss_fn, opt, params, prompts, completions, adv, lengths)
    t3 = time.perf_counter()
    tokens = int(lengths.sum()) if VARLEN else P * G * C
    return {"step": t3 - t0, "generate": t1 - t0, "reward": t2 - t1, "train": t3 - t2, "step_cpu": time.process_time() - c0,
            "tokens_per_s": tokens / (t3 - t0)}


def decode_step(model, gen):
    """One decode step at batch P*G: (generate n) - (generate 1), / (n-1)."""
    prompts = torch.stack([prompt_ids(10000 + j) for j in range(P)])

    def timed(n):
        t0 = time.perf_counter()
        generate(model, prompts, G, n, gen)
        return time.perf_counter() - t0

    timed(C)
    xs = []
    for _ in range(3):
        short = timed(1)
        xs.append((timed(C) - short) / (C - 1))
    return statistics.median(xs)


def main():
    global DECODE_THREADS
    torch.set_num_threads(THREADS)
    torch.ones(8, 8) @ torch.ones(8, 8)  # loads the BLAS (OpenBLAS's pool can be sized only then)
    openblas = openblas_loaded(torch)
    threads = f"{torch.get_num_threads()} threads"
    DECODE_THREADS = int(os.environ.get("DECODE_THREADS") or (1 if openblas else THREADS))
    if openblas:
        set_openblas_threads(BLAS_THREADS)
        threads += f" (OpenBLAS {BLAS_THREADS})"
    if DECODE_THREADS != torch.get_num_threads():
        threads += f", {DECODE_THREADS} while decoding"
    mode = "compile" if COMPILE else "eager"
    if COMPILE and not COMPILE_DECODE:
        mode += " (training only)"
    version = torch.__version__.split("+")[0]
    info = f"torch {torch.__version__} {mode}, {torch_build_info(torch)}, {threads}, python {platform.python_version()}"
    print(info, file=sys.stderr)  # the first line: which torch, BLAS and ISA
    torch.manual_seed(0)
    model = Llama(LORA)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=LR, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    gen = torch.Generator().manual_seed(1)
    print(f"torch grpostep {VARIANT!r}: {sum(p.numel() for p in model.parameters())} params, "
          f"{sum(p.numel() for p in params)} trainable", file=sys.stderr)

    def loss_fn(*args):
        return micro_loss(model, *args)

    gen_model = model
    res = {}
    if COMPILE:
        loss_fn = torch.compile(loss_fn)
        if COMPILE_DECODE:
            gen_model = torch.compile(model, dynamic=True)
        res["compile"] = warm_up(gen_model, loss_fn, opt, 1 + STEPS)
        print(f"torch.compile warm-up: {res['compile']:.1f} s ({graphs_compiled()} graphs), not in any step", file=sys.stderr)
    graphs = graphs_compiled() if COMPILE else 0
    runs = []
    for k in range(1 + STEPS):
        t = step(gen_model, loss_fn, opt, params, k, gen)
        runs.append(t)
        print(f"torch step {k + 1}: {t['step']:.2f} s (generate {t['generate']:.2f} s, train {t['train']:.2f} s), {t['step_cpu']:.2f} CPU s"
              + (f", {t['tokens_per_s']:.1f} completion tokens/s (every row decoded until the last ends)" if VARLEN else ""), file=sys.stderr)
        if COMPILE and graphs_compiled() != graphs:
            print(f"torch step {k + 1}: {graphs_compiled() - graphs} graphs recompiled (in the step's time)", file=sys.stderr)
            graphs = graphs_compiled()
    res["first"] = runs[0]["step"]
    keys = ("step", "generate", "reward", "train", "step_cpu") + (("tokens_per_s",) if VARLEN else ())
    for key in keys:
        res[key] = statistics.median(r[key] for r in runs[1:])
    if VARIANT == "genheavy" and os.environ.get("DECODE") == "1":
        res["decode"] = decode_step(gen_model, gen)
        print(f"torch decode step at batch {P * G}: {1e3 * res['decode']:.1f} ms", file=sys.stderr)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    json.dump({"label": f"torch {version} {mode.split()[0]}", "info": info, "seconds": res, "memory": {"peak_rss_mb": rss}}, sys.stdout)


if __name__ == "__main__":
    main()
