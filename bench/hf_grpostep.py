"""One GRPO optimizer step as a plain transformers + PEFT loop: the twin of
bench/grpostep on a GPU (the GPU kit, bench/gpukit/run.sh, runs both on the
same model folder).

A step: generate G completions of each prompt (model.generate, sampling at
temperature 1, exactly NEW_TOKENS new tokens: min_new_tokens =
max_new_tokens), per-token log-probs of the completions (logits / T,
log_softmax, gather), the clipped GRPO loss with random group-normalized
advantages (one iteration, so the ratio is exp(logp - logp.detach())),
backward, clip_grad_norm_(1.0) and AdamW (lr 1e-6, TRL's default). LoRA:
r=16, alpha 32 on q, k, v, o, gate, up and down (peft.LoraConfig), as
bench/grpostep's lora variant; full: every weight trains, in bf16.

    python3 bench/hf_grpostep.py --model DIR --variant lora --prompts 8 --g 8 \
        --new-tokens 256 --prompt-len 64 --steps 3 --json out.json

It writes bench/grpostep's -torch format ({"info", "seconds": {"first",
"step", "generate", "train"}, "memory": {...}}) plus the fields the GPU
kit's summary reads (step_s, first_step_s, generate_s, train_s). Without
torch, transformers or peft it prints one line saying so and exits 3.
"""

import argparse
import json
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, help="Hugging Face model folder")
    ap.add_argument("--variant", choices=["lora", "full"], default="lora")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--g", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--new-tokens", type=int, default=256)
    ap.add_argument("--micro-batch", type=int, default=0, help="rows per forward/backward (0: all)")
    ap.add_argument("--steps", type=int, default=3, help="timed steps after the first")
    ap.add_argument("--dtype", choices=["bf16", "f32"], default="bf16")
    ap.add_argument("--json", default="", help="write the figures here")
    a = ap.parse_args()
    try:
        import torch
        import transformers
        import peft
    except ImportError as e:
        print(f"hf_grpostep: skipped: {e} (needs torch, transformers and peft)")
        sys.exit(3)

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_pretrained(a.model, dtype=dtype).to(dev)
    model.generation_config.pad_token_id = model.config.eos_token_id if isinstance(model.config.eos_token_id, int) else 0
    if a.variant == "lora":
        cfg = peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0,
                              target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
        model = peft.get_peft_model(model, cfg)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-6, weight_decay=0.0)
    vocab = model.config.vocab_size
    rows = a.prompts * a.g
    mb = a.micro_batch or rows

    def sync():
        if dev == "cuda":
            torch.cuda.synchronize()

    def one_step(i):
        g = torch.Generator().manual_seed(i)
        prompts = torch.randint(3, vocab, (a.prompts, a.prompt_len), generator=g).to(dev)
        ids = prompts.repeat_interleave(a.g, dim=0)
        sync()
        t0 = time.perf_counter()
        model.eval()
        with torch.no_grad():
            seq = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=True, temperature=1.0,
                                 top_k=0, top_p=1.0, max_new_tokens=a.new_tokens, min_new_tokens=a.new_tokens)
        sync()
        t1 = time.perf_counter()
        model.train()
        rewards = torch.rand(a.prompts, a.g, generator=g)
        adv = ((rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + 1e-4)).reshape(-1).to(dev)
        P = a.prompt_len
        tokens = rows * a.new_tokens
        for lo in range(0, rows, mb):
            s = seq[lo:lo + mb]
            logits = model(input_ids=s).logits[:, P - 1:-1].float()  # temperature 1
            logp = torch.log_softmax(logits, -1).gather(-1, s[:, P:].unsqueeze(-1)).squeeze(-1)
            ratio = torch.exp(logp - logp.detach())
            A = adv[lo:lo + mb].unsqueeze(1)
            loss = -torch.min(ratio * A, torch.clamp(ratio, 0.8, 1.2) * A).sum() / tokens
            loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        t2 = time.perf_counter()
        return t2 - t0, t1 - t0, t2 - t1

    first = one_step(0)
    print(f"hf_grpostep {a.variant}: first step {first[0]:.3f} s (generate {first[1]:.3f}, train {first[2]:.3f})", flush=True)
    steps = []
    for i in range(a.steps):
        steps.append(one_step(i + 1))
        print(f"hf_grpostep {a.variant}: step {i + 1}: {steps[-1][0]:.3f} s (generate {steps[-1][1]:.3f}, train {steps[-1][2]:.3f})", flush=True)
    med = [statistics.median(x[k] for x in steps) for k in range(3)]
    mem = torch.cuda.max_memory_allocated() / 2**20 if dev == "cuda" else 0
    info = (f"torch {torch.__version__}, transformers {transformers.__version__}, peft {peft.__version__}, "
            f"{torch.cuda.get_device_name() if dev == 'cuda' else 'CPU'}, {a.dtype}")
    out = {
        "info": info,
        "seconds": {"first": first[0], "step": med[0], "generate": med[1], "train": med[2]},
        "memory": {"peak_gpu_mb": mem},
        "variant": a.variant, "step_s": med[0], "first_step_s": first[0], "generate_s": med[1], "train_s": med[2],
        "prompts": a.prompts, "g": a.g, "new_tokens": a.new_tokens,
    }
    print(f"hf_grpostep {a.variant}: {info}; step median {med[0]:.3f} s (generate {med[1]:.3f}, train {med[2]:.3f}), "
          f"first {first[0]:.3f} s, peak GPU memory {mem:.0f} MiB")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
