"""GRPO after a supervised warm start: grpokit and TRL 1.16's GRPOTrainer on
the same model, rows and settings, step by step.

    /work/venv/bin/python internal/trlref/warmstart.py data   DIR
    /work/venv/bin/python internal/trlref/warmstart.py warm   DIR GRPOKIT
    /work/venv/bin/python internal/trlref/warmstart.py trl    DIR LR SEED
    /work/venv/bin/python internal/trlref/warmstart.py grpokit DIR GRPOKIT LR SEED
    /work/venv/bin/python internal/trlref/warmstart.py trlstep DIR LR SEED
    /work/venv/bin/python internal/trlref/warmstart.py report DIR OUT.md

data writes DIR/train.jsonl (160 rows) and DIR/eval.jsonl (40 rows) of
{"prompt": "what is 3+9?", "answer": "12"} (one-digit sums, seed 0). warm
runs grpokit's supervised warm start (tiny model: hidden 64, 2 layers, 4
heads, intermediate 128, 64 positions, words_from_dataset 20; sft
max_steps 150, learning_rate 3e-3) followed by one GRPO step at learning
rate 0, which leaves the weights as the warm start left them, and copies
its final/ folder to DIR/warm: a Hugging Face folder both trainers start
from. trl and grpokit each run 40 GRPO steps on it with the same settings
(num_generations 8, per_device_train_batch_size 32, max_completion_length
4, constant learning rate LR, beta 0, loss_type dapo, scale_rewards group,
temperature 1, top_p 1, top_k 0, no shuffling, seed SEED) and grpokit's
numeric reward, and write DIR/{trl,grpokit}-LR-SEED.jsonl (one line a
step: reward, reward_std, frac_reward_zero_std, loss, grad_norm, entropy)
and DIR/{trl,grpokit}-LR-SEED.eval.json (greedy reward on the eval rows
before and after). report writes the tables of the results page to OUT.md;
`go run ./bench/warmstart -dir DIR -out OUT.png` draws the curves.

The sampled completions differ between the two trainers (their random
number generators differ), so the curves are compared across seeds, not
token by token. trlstep keeps the first step of TRL's run (its sampled
completions, rewards, loss, gradient norm and the weights after it) in
DIR/trlstep; grpo's TestWarmStartStepTRL116 (GRPOKIT_WARMSTART_STEP=DIR)
retakes that step on the same completions and compares.
"""

import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

STEPS = 40
SETTINGS = dict(num_generations=8, per_device_train_batch_size=32, max_completion_length=4,
                lr_scheduler_type="constant", beta=0.0, loss_type="dapo", scale_rewards="group",
                temperature=1.0, top_p=1.0, top_k=0, shuffle_dataset=False, max_steps=STEPS)
# WARMSTART_SETTINGS (JSON) overrides some of them, on both sides, for the
# variants of the results page (e.g. '{"temperature": 0.7}').
SETTINGS.update(json.loads(os.environ.get("WARMSTART_SETTINGS", "{}")))
STEPS = SETTINGS["max_steps"]
# WARMSTART_SFT_STEPS: the warm start's supervised steps (default 150).
SFT_STEPS = int(os.environ.get("WARMSTART_SFT_STEPS", "150"))
TINY = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
            max_position_embeddings=64, words_from_dataset=20)

# grpokit's reward.NumericMatch: 1 when the last number of the completion is
# the answer's (within tolerance 0), else 0 (reward/number.go, builtin.go).
NUMBER = re.compile(r"[-−]?\$?(?:\d[\d,]*(?:\.\d*)?|\.\d+)")


def parse_clean(tok):
    tok = tok.replace("−", "-", 1).replace("$", "", 1).replace(",", "")
    if tok.endswith("."):
        tok = tok[:-1]
    if tok in ("", "-"):
        raise ValueError(tok)
    return float(tok)


def parse_number(s):
    t = s.strip().rstrip(".,!?:;")
    if t.endswith("%"):
        t = t[:-1]
    t = t.strip()
    m = NUMBER.match(t)
    if not t or m is None or m.end() != len(t):
        raise ValueError(s)
    return parse_clean(t)


def last_number(text):
    for m in reversed(list(NUMBER.finditer(text))):
        tok = m.group(0)
        if m.start() > 0 and tok[0] in "-−":
            prev = text[m.start() - 1]
            if prev.isalpha() or prev.isdigit():
                tok = tok[1:]
        try:
            return parse_clean(tok)
        except ValueError:
            continue
    return None


def numeric(completion, answer):
    try:
        want = parse_number(answer)
    except ValueError:
        return 0.0
    got = last_number(completion)
    return 1.0 if got is not None and abs(got - want) <= 0 else 0.0


def write_jsonl(path, rows):
    with open(path, "w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")


def read_jsonl(path):
    with open(path) as fh:
        return [json.loads(l) for l in fh if l.strip()]


def cmd_data(d):
    os.makedirs(d, exist_ok=True)
    rng = random.Random(0)
    rows = []
    for _ in range(200):
        a, b = rng.randint(0, 9), rng.randint(0, 9)
        rows.append({"prompt": f"what is {a}+{b}?", "answer": str(a + b)})
    write_jsonl(os.path.join(d, "train.jsonl"), rows[:160])
    write_jsonl(os.path.join(d, "eval.jsonl"), rows[160:])


def yaml_config(d, out, lr, seed, warm):
    """A grpokit run config (JSON is YAML)."""
    cfg = {"output_dir": out, "overwrite_output_dir": True, "learning_rate": lr, "seed": seed,
           "logging_steps": 1, "save_steps": 100000,
           "dataset": {"path": os.path.join(d, "train.jsonl"), "eval_path": os.path.join(d, "eval.jsonl")},
           "rewards": [{"type": "numeric"}], "eval": {"n": 40}}
    cfg.update({k: v for k, v in SETTINGS.items()})
    if warm:
        cfg["model"] = {"tiny": TINY}
        cfg["sft"] = {"max_steps": SFT_STEPS, "learning_rate": 0.003}
        cfg["max_steps"] = 1
    else:
        cfg["model"] = {"model_name_or_path": os.path.join(d, "warm")}
    return cfg


def run_grpokit(d, binary, lr, seed, warm=False):
    out = os.path.join(d, "run-warm" if warm else f"run-grpokit-{lr:g}-{seed}")
    path = out + ".yaml"
    with open(path, "w") as fh:
        json.dump(yaml_config(d, out, lr, seed, warm), fh, indent=1)
    res = subprocess.run([binary, "train", "-config", path], capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(res.stdout + res.stderr)
    return out, res.stdout


def greedy_line(stdout, label):
    m = re.search(label + r" \(greedy, \d+ examples\): reward ([0-9.]+)", stdout)
    return float(m.group(1)) if m else None


def cmd_warm(d, binary):
    out, _ = run_grpokit(d, binary, 0.0, 42, warm=True)
    shutil.rmtree(os.path.join(d, "warm"), ignore_errors=True)
    shutil.copytree(os.path.join(out, "final"), os.path.join(d, "warm"))


KEYS = ["reward", "reward_std", "frac_reward_zero_std", "loss", "grad_norm", "entropy",
        "completions/mean_length", "completions/clipped_ratio"]


def cmd_grpokit(d, binary, lr, seed):
    out, stdout = run_grpokit(d, binary, lr, seed)
    steps = [{k: r.get(k) for k in ["step"] + KEYS} for r in read_jsonl(os.path.join(out, "metrics.jsonl")) if "reward" in r]
    name = os.path.join(d, f"grpokit-{lr:g}-{seed}")
    write_jsonl(name + ".jsonl", steps)
    with open(name + ".eval.json", "w") as fh:
        json.dump({"before": greedy_line(stdout, "before"), "after": greedy_line(stdout, "after")}, fh)


def cmd_trl(d, lr, seed):
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import warnings
    warnings.filterwarnings("ignore")
    import datasets
    import torch
    from transformers import LlamaForCausalLM, PreTrainedTokenizerFast, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(1)
    warm = os.path.join(d, "warm")
    tok = PreTrainedTokenizerFast.from_pretrained(warm)
    model = LlamaForCausalLM.from_pretrained(warm, dtype=torch.float32, attn_implementation="eager")
    train = read_jsonl(os.path.join(d, "train.jsonl"))
    evalrows = read_jsonl(os.path.join(d, "eval.jsonl"))

    def reward(prompts, completions, answer, **kw):
        return [numeric(c, a) for c, a in zip(completions, answer)]
    reward.__name__ = "numeric"

    @torch.no_grad()
    def greedy(m):
        m.eval()
        total = 0.0
        for r in evalrows:
            ids = tok(r["prompt"], add_special_tokens=False, return_tensors="pt").input_ids
            out = m.generate(ids, max_new_tokens=SETTINGS["max_completion_length"], do_sample=False,
                             eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
            text = tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True)
            total += numeric(text, r["answer"])
        m.train()
        return total / len(evalrows)

    class Logs(TrainerCallback):
        def __init__(self):
            self.rows = []

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "reward" in logs:
                self.rows.append({"step": state.global_step, **{k: logs.get(k) for k in KEYS}})

    before = greedy(model)
    args = GRPOConfig(output_dir=os.path.join(d, f"run-trl-{lr:g}-{seed}"), use_cpu=True, bf16=False,
                      report_to="none", logging_steps=1, save_strategy="no", learning_rate=lr, seed=seed,
                      gradient_accumulation_steps=1, dataloader_num_workers=0, gradient_checkpointing=False,
                      **SETTINGS)
    tr = GRPOTrainer(model=model, reward_funcs=[reward], args=args,
                     train_dataset=datasets.Dataset.from_list(train), processing_class=tok)
    logs = Logs()
    tr.add_callback(logs)
    tr.train()
    after = greedy(tr.model)
    name = os.path.join(d, f"trl-{lr:g}-{seed}")
    write_jsonl(name + ".jsonl", logs.rows)
    with open(name + ".eval.json", "w") as fh:
        json.dump({"before": before, "after": after}, fh)
    print(name, before, after)


def cmd_trlstep(d, lr, seed):
    """The first step of trl's run, for grpokit to retake on the same
    completions: DIR/trlstep/step.json (prompt and completion ids and
    masks, rewards, TRL's loss and grad_norm) and step.safetensors (every
    weight after the step)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import warnings
    warnings.filterwarnings("ignore")
    import datasets
    import torch
    from safetensors.torch import save_file
    from transformers import LlamaForCausalLM, PreTrainedTokenizerFast, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(1)
    warm = os.path.join(d, "warm")
    tok = PreTrainedTokenizerFast.from_pretrained(warm)
    model = LlamaForCausalLM.from_pretrained(warm, dtype=torch.float32, attn_implementation="eager")
    train = read_jsonl(os.path.join(d, "train.jsonl"))
    scored = []

    def reward(prompts, completions, answer, **kw):
        out = [numeric(c, a) for c, a in zip(completions, answer)]
        scored.extend(out)
        return out
    reward.__name__ = "numeric"
    settings = dict(SETTINGS, max_steps=1)
    args = GRPOConfig(output_dir=os.path.join(d, "run-trlstep"), use_cpu=True, bf16=False, report_to="none",
                      logging_steps=1, save_strategy="no", learning_rate=lr, seed=seed,
                      gradient_accumulation_steps=1, dataloader_num_workers=0, gradient_checkpointing=False,
                      **settings)
    tr = GRPOTrainer(model=model, reward_funcs=[reward], args=args,
                     train_dataset=datasets.Dataset.from_list(train), processing_class=tok)
    batches = []
    gen = tr._generate_and_score_completions

    def wrapped(inputs):
        out = gen(inputs)
        batches.append(out)
        return out
    tr._generate_and_score_completions = wrapped

    class Logs(TrainerCallback):
        def __init__(self):
            self.rows = []

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "loss" in logs:
                self.rows.append(dict(logs))
    logs = Logs()
    tr.add_callback(logs)
    tr.train()
    b = batches[0]
    doc = {"reference": "TRL's GRPOTrainer.train(), one step, run by internal/trlref/warmstart.py trlstep",
           "learning_rate": lr, "seed": seed, "eos": tok.eos_token_id,
           "prompt_ids": b["prompt_ids"].tolist(), "prompt_mask": b["prompt_mask"].tolist(),
           "completion_ids": b["completion_ids"].tolist(), "completion_mask": b["completion_mask"].float().tolist(),
           "rewards": scored, "advantages": b["advantages"].tolist(),
           "loss": float(logs.rows[0]["loss"]), "grad_norm": float(logs.rows[0]["grad_norm"]),
           "weights": []}
    weights = {}
    for n, p in tr.model.named_parameters():
        if p.requires_grad and not n.endswith("lm_head.weight"):
            weights[n] = p.detach().to(torch.float32).contiguous().clone()
    opt = getattr(tr.optimizer, "optimizer", tr.optimizer)
    names = {id(p): n for n, p in tr.model.named_parameters() if n in weights}
    for p, st in opt.state.items():
        if id(p) in names:
            weights["grad." + names[id(p)]] = (st["exp_avg"] / (1 - tr.args.adam_beta1)).to(torch.float32).contiguous().clone()
    doc["weights"] = sorted(k for k in weights if not k.startswith("grad."))
    out = os.path.join(d, "trlstep")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "step.json"), "w") as fh:
        json.dump(doc, fh)
    save_file(dict(sorted(weights.items())), os.path.join(out, "step.safetensors"), metadata={"format": "pt"})
    print("trlstep", doc["loss"], doc["grad_norm"], sum(scored) / len(scored))


def cmd_report(d, out_md):
    import numpy as np
    runs = {}
    for path in sorted(glob.glob(os.path.join(d, "*-*-*.jsonl"))):
        side, lr, seed = os.path.basename(path)[:-len(".jsonl")].rsplit("-", 2)
        if side not in ("trl", "grpokit"):
            continue
        with open(path[:-len(".jsonl")] + ".eval.json") as fh:
            ev = json.load(fh)
        runs.setdefault((float(lr), side), []).append((int(seed), read_jsonl(path), ev))
    lines = []
    lrs = sorted({lr for lr, _ in runs}, reverse=True)
    # Summary: per learning rate and side, the mean over seeds.
    last = f"steps {STEPS - 4}–{STEPS}"
    lines.append(f"| lr | trainer | seeds | greedy before | greedy after | sampled reward, steps 1–5 | {last} | "
                 f"frac_reward_zero_std, {last} | entropy, step 1 → {STEPS} |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for lr in lrs:
        for side in ("grpokit", "trl"):
            rs = runs.get((lr, side), [])
            if not rs:
                continue
            rew = np.array([[s["reward"] for s in st] for _, st, _ in rs])
            zs = np.array([[s["frac_reward_zero_std"] for s in st] for _, st, _ in rs])
            ent = np.array([[s["entropy"] for s in st] for _, st, _ in rs])
            afters = ", ".join("%.3f" % e["after"] for *_, e in rs)
            lines.append(f"| {lr:g} | {side} | {len(rs)} | {np.mean([e['before'] for *_, e in rs]):.3f} | "
                         f"{np.mean([e['after'] for *_, e in rs]):.3f} ({afters}) | "
                         f"{rew[:, :5].mean():.3f} | {rew[:, -5:].mean():.3f} | {zs[:, -5:].mean():.2f} | "
                         f"{ent[:, 0].mean():.3f} → {ent[:, -1].mean():.3f} |")
    lines.append("")
    # Per step: sampled reward, mean over seeds.
    head = "| step | " + " | ".join(f"{side} {lr:g}" for lr in lrs for side in ("grpokit", "trl")) + " |"
    lines.append(head)
    lines.append("|---" * (1 + 2 * len(lrs)) + "|")
    means = {}
    for key, rs in runs.items():
        means[key] = np.array([[s["reward"] for s in st] for _, st, _ in rs]).mean(axis=0)
    for i in range(STEPS) if STEPS <= 40 else range(0, STEPS, 10):
        row = [f"{means[(lr, side)][i]:.3f}" if (lr, side) in means else "" for lr in lrs for side in ("grpokit", "trl")]
        lines.append(f"| {i + 1} | " + " | ".join(row) + " |")
    with open(out_md, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def main():
    a = sys.argv[1:]
    if a[0] == "data":
        cmd_data(a[1])
    elif a[0] == "warm":
        cmd_warm(a[1], a[2])
    elif a[0] == "trl":
        cmd_trl(a[1], float(a[2]), int(a[3]))
    elif a[0] == "grpokit":
        cmd_grpokit(a[1], a[2], float(a[3]), int(a[4]))
    elif a[0] == "trlstep":
        cmd_trlstep(a[1], float(a[2]), int(a[3]))
    elif a[0] == "report":
        cmd_report(a[1], a[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
