"""GSM8K with TRL's GRPOTrainer and LoRA, beside examples/gsm8k.

It trains the same Hugging Face folder on the same rows in the same order
(the JSONL that `examples/gsm8k -rows FILE` writes), with the GRPOConfig
values of the same YAML file (bench/trl/gsm8k.yaml), the same LoRA adapter
(r, alpha = 2r, q_proj and v_proj, no dropout: grpokit's lora.Config) and
the five rewards of the GRPO GSM8K seed as envs/gsm8k defines them, and
optionally evaluates the first held-out problems greedily before and after,
as examples/gsm8k does.

The rewards are gsm8k_rewards.py's: envs/gsm8k's definitions in Python.

Usage (see README.md):

    python bench/trl/gsm8k.py --model DIR --rows rows.jsonl --out OUT
        [--config bench/trl/gsm8k.yaml] [--stop-after N] [--eval-n N]

Outputs in OUT: metrics.jsonl (TRL's logged values, one line per step, with
the wall time of the step), eval.jsonl (with --eval-n: the share of exact
answers (the correctness reward's test), the strict-format rate, mean
completion tokens, the seed rewards' means, the first answers),
checkpoints (resumable: run the same command again).
"""

import json
import os
import time

import torch
import yaml
from datasets import Dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.trainer_utils import get_last_checkpoint
from trl import GRPOConfig, GRPOTrainer

from gsm8k_rewards import REWARDS, correctness, strict_format
import cli
from steplog import Log

@torch.no_grad()
def evaluate(model, tok, rows, max_new, batch=32):
    """Greedy answers to the held-out rows: examples/gsm8k's report."""
    model.eval()
    tok.padding_side = "left"
    comps, lengths = [], []
    for s in range(0, len(rows), batch):
        texts = [tok.apply_chat_template(r["prompt"], tokenize=False, add_generation_prompt=True)
                 for r in rows[s:s + batch]]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        out = model.generate(**enc, do_sample=False, max_new_tokens=max_new, pad_token_id=tok.pad_token_id)
        for ids in out[:, enc["input_ids"].size(1):].tolist():
            ids = [i for i in ids if i != tok.pad_token_id]
            if tok.eos_token_id in ids:
                ids = ids[:ids.index(tok.eos_token_id)]
            lengths.append(len(ids))
            comps.append(tok.decode(ids, skip_special_tokens=True))
    model.train()
    n = len(rows)
    answers = [r["answer"] for r in rows]
    rewards = {f.__name__: sum(f(completions=comps, answer=answers)) / n for f in REWARDS}
    return {"n": n, "exact_answer": sum(v > 0 for v in correctness(comps, answers)) / n,
            "strict_format": sum(v > 0 for v in strict_format(comps)) / n,
            "mean_completion_tokens": sum(lengths) / n, "rewards": rewards, "samples": comps[:3]}


def main():
    ap = cli.parser(__doc__, "gsm8k.yaml", "examples/gsm8k")
    ap.add_argument("--eval-n", type=int, default=0, help="evaluate the first N held-out problems before and after (0: none)")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    c = yaml.safe_load(open(a.config))
    os.makedirs(a.out, exist_ok=True)

    rows = [json.loads(l) for l in open(a.rows)]
    train = [{"prompt": r["prompt"], "answer": r["answer"]} for r in rows if r["split"] == "train"]
    held = [r for r in rows if r["split"] == "eval"][:a.eval_n]
    want = (a.stop_after or c["max_steps"]) * c["prompts"]
    if len(train) < want:
        raise SystemExit(f"gsm8k.py: {a.rows} has {len(train)} training rows, want {want}")

    tok = AutoTokenizer.from_pretrained(a.model)
    longest = max(len(tok.apply_chat_template(r["prompt"], add_generation_prompt=True)) for r in train[:want])
    if longest > c["max_prompt_length"]:
        raise SystemExit(f"gsm8k.py: a prompt of {longest} tokens: grpokit keeps the last {c['max_prompt_length']}, TRL 1.16 all")
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32)
    r = c["lora_r"]
    peft = LoraConfig(r=r, lora_alpha=2 * r, target_modules=["q_proj", "v_proj"], lora_dropout=0.0, bias="none",
                      task_type="CAUSAL_LM")
    args = GRPOConfig(
        output_dir=a.out, max_steps=c["max_steps"], num_generations=c["num_generations"],
        per_device_train_batch_size=c["prompts"] * c["num_generations"], gradient_accumulation_steps=1,
        learning_rate=c["learning_rate"], lr_scheduler_type=c["lr_scheduler_type"], warmup_steps=0,
        beta=c["beta"], loss_type=c["loss_type"], scale_rewards=c["scale_rewards"],
        max_completion_length=c["max_completion_length"], temperature=c["temperature"], top_p=c["top_p"],
        top_k=c["top_k"], seed=c["seed"], gradient_checkpointing=c["gradient_checkpointing"],
        shuffle_dataset=c["shuffle_dataset"], max_grad_norm=c["max_grad_norm"],
        bf16=False, use_cpu=True, logging_steps=1, save_steps=5, save_total_limit=1, report_to="none",
        log_completions=False, disable_dropout=True,
    )
    trainer = GRPOTrainer(model=model, args=args, reward_funcs=REWARDS, train_dataset=Dataset.from_list(train),
                          processing_class=tok, peft_config=peft,
                          callbacks=[Log(os.path.join(a.out, "metrics.jsonl"), a.stop_after)])
    last = get_last_checkpoint(a.out) if os.path.isdir(a.out) else None
    evals = os.path.join(a.out, "eval.jsonl")
    if held and last is None:
        t0 = time.perf_counter()
        res = evaluate(trainer.model, tok, held, c["max_completion_length"])
        print(f"before training ({len(held)} held-out problems, greedy, {time.perf_counter() - t0:.0f} s): {res}")
        with open(evals, "a") as f:
            f.write(json.dumps({"step": 0, **res}) + "\n")
    t0 = time.perf_counter()
    trainer.train(resume_from_checkpoint=last)
    print(f"gsm8k.py: trained to step {trainer.state.global_step} in {time.perf_counter() - t0:.0f} s")
    if held:
        res = evaluate(trainer.model, tok, held, c["max_completion_length"])
        print(f"after {trainer.state.global_step} GRPO steps: {res}")
        with open(evals, "a") as f:
            f.write(json.dumps({"step": trainer.state.global_step, **res}) + "\n")


if __name__ == "__main__":
    main()
