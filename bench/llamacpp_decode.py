"""Times llama.cpp generation the way bench/decode times grpokit's.

B sequences of a fixed prompt (the same token ids as bench/decode), prefilled
in one llama_decode call, then a fixed number of new tokens each, one
llama_decode call per step with one token per sequence (greedy argmax over
the logits; end-of-sequence ignored). Prefill tokens/s is B*prompt over the
prefill call; decode tokens/s is B*new over the decode steps (argmax
included, as grpokit's sampling is). Each batch size runs with 1 and with 2
threads (THREADS overrides) and the faster is kept.

    pip install llama-cpp-python==0.3.36   # built from source: CMAKE_ARGS=-DGGML_NATIVE=ON
    python bench/llamacpp_decode.py smollm2-F32.gguf [--batch 1,8,32] [--json out.json]
"""
import argparse
import json
import os
import statistics
import time

import numpy as np
import llama_cpp as L


@L.llama_log_callback
def _quiet(level, text, user_data):
    """Drops llama.cpp's log lines (kept at module level: ctypes must not free it)."""


def run(model, vocab, b, prompt, new, threads):
    cp = L.llama_context_default_params()
    cp.n_ctx = ((b * (prompt + new + 8) + 255) // 256) * 256
    cp.n_batch = max(b * prompt, 512)
    cp.n_ubatch = cp.n_batch
    cp.n_seq_max = b
    cp.n_threads = cp.n_threads_batch = threads
    cp.kv_unified = True
    ctx = L.llama_init_from_model(model, cp)
    if not ctx:
        raise SystemExit("llama_init_from_model failed")
    batch = L.llama_batch_init(b * prompt, 0, b)
    try:
        k = 0
        for s in range(b):
            for j in range(prompt):
                batch.token[k] = 100 + (s * 7919 + j * 104729) % (vocab - 200)
                batch.pos[k] = j
                batch.n_seq_id[k] = 1
                batch.seq_id[k][0] = s
                batch.logits[k] = j == prompt - 1
                k += 1
        batch.n_tokens = k
        t0 = time.perf_counter()
        if L.llama_decode(ctx, batch) != 0:
            raise SystemExit("llama_decode (prefill) failed")
        t1 = time.perf_counter()
        outs = [prompt - 1 + s * prompt for s in range(b)]
        for step in range(new):
            nxt = []
            for i in outs:
                logits = np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, i), shape=(vocab,))
                nxt.append(int(logits.argmax()))
            for s in range(b):
                batch.token[s] = nxt[s]
                batch.pos[s] = prompt + step
                batch.n_seq_id[s] = 1
                batch.seq_id[s][0] = s
                batch.logits[s] = True
            batch.n_tokens = b
            if L.llama_decode(ctx, batch) != 0:
                raise SystemExit("llama_decode (step) failed")
            outs = list(range(b))
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1
    finally:
        L.llama_batch_free(batch)
        L.llama_free(ctx)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--batch", default="1,8,32")
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    L.llama_backend_init()
    L.llama_log_set(_quiet, None)
    mp = L.llama_model_default_params()
    model = L.llama_model_load_from_file(a.model.encode(), mp)
    vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))
    sysinfo = L.llama_print_system_info().decode()
    print(f"llama.cpp (llama-cpp-python {L.__version__}): {a.model}, prompt {a.prompt}, new {a.new}")
    print(f"  {sysinfo.strip()}")
    threads = [int(t) for t in os.environ.get("THREADS", "1,2").split(",")]
    results = []
    for b in [int(x) for x in a.batch.split(",")]:
        best = None
        for th in threads:
            run(model, vocab, b, a.prompt, min(a.new, 4), th)  # warm-up
            pre, dec = zip(*[run(model, vocab, b, a.prompt, a.new, th) for _ in range(a.reps)])
            r = {"batch": b, "threads": th, "prefill_s": statistics.median(pre), "decode_s": statistics.median(dec)}
            r["prefill_tok_s"] = b * a.prompt / r["prefill_s"]
            r["decode_tok_s"] = b * a.new / r["decode_s"]
            print(f"batch {b:2d}, {th} threads: prefill {r['prefill_tok_s']:8.1f} tok/s, decode {r['decode_tok_s']:8.1f} tok/s")
            if best is None or r["decode_tok_s"] > best["decode_tok_s"]:
                best = r
        results.append(best)
    L.llama_model_free(model)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "llama_cpp_python": L.__version__, "system_info": sysinfo,
                       "prompt": a.prompt, "new": a.new, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
