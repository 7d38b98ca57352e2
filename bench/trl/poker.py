"""The poker task with TRL's GRPOTrainer, beside examples/poker.

It trains the same Hugging Face folder on the same rows in the same order
(the JSONL that `examples/poker -rows FILE` writes), with the GRPOConfig
values of the same YAML file (bench/trl/poker.yaml), the same class-weighted
reward and the same constraint, and evaluates the same 540 held-out hands
greedily before and after, as examples/poker does.

The constraint. TRL has no constrained decoding; the nearest equivalent is
two pieces, both here and both driven by the same trie of the nine labels
(each label's tokens, then EOS) that examples/poker builds:

* sampling: a transformers LogitsProcessor, passed to model.generate,
  sets the logits of the tokens the trie forbids to -inf, so every
  completion is one label then EOS (what grpokit's constrained sampler
  draws);
* the loss: GRPOTrainer._get_per_token_logps_and_entropies is overridden
  to mask the same tokens before the log-softmax, so that log-probabilities,
  entropies and gradients are those of the distribution the sampler really
  draws from, as grpokit computes them (grpo.Constrained). Without it TRL
  would differentiate the unconstrained softmax over all 49,152 tokens.

--replay ROLLOUTS makes the first generation batch the completions that
grpokit drew at its step 1 (its rollouts.jsonl), so that the first step's
loss and gradient norm are computed on identical inputs on both sides.

Usage (see README.md):

    python bench/trl/poker.py --model DIR --rows rows.jsonl --out OUT
        [--config bench/trl/poker.yaml] [--stop-after N] [--replay ROLLOUTS]

Outputs in OUT: metrics.jsonl (TRL's logged values, one line per step, with
the wall time of the step), eval.jsonl (before and after: accuracy per
class, macro accuracy, mean reward, confusion matrix), checkpoints
(resumable: run the same command again).
"""

import json
import os
import time

import torch
import yaml
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, LogitsProcessor, LogitsProcessorList
from transformers.trainer_utils import get_last_checkpoint
from trl import GRPOConfig, GRPOTrainer

import cli
from steplog import Log

LABELS = ["high card", "one pair", "two pair", "three of a kind", "straight", "flush", "full house",
          "four of a kind", "straight flush"]
# envs/poker's Weight, class by class.
WEIGHTS = dict(zip(LABELS, [1.0, 1.0, 1.5, 2.0, 2.0, 2.0, 2.5, 3.0, 3.0]))
ABBREV = ["high", "pair", "2pair", "trips", "str", "flush", "full", "quads", "sflush"]


def parse_label(s):
    """envs/poker's ParseLabel: case, spaces, '_'/'-' and a final '.' forgiven; None if not a label."""
    t = s.strip().lower()
    if t.endswith("."):
        t = t[:-1]
    t = " ".join(t.replace("_", " ").replace("-", " ").split())
    return t if t in WEIGHTS else None


def correct(completions, answer, **_):
    """The class-weighted reward (envs/poker's Reward), named "correct" as in grpokit."""
    out = []
    for c, a in zip(completions, answer):
        text = c[-1]["content"] if isinstance(c, list) else c
        out.append(WEIGHTS[a] if parse_label(text) == a else 0.0)
    return out


class Trie:
    """The labels' token sequences, each followed by EOS: allowed(prefix) is the set of next tokens."""

    def __init__(self, tok):
        self.eos = tok.eos_token_id
        self.next = {}
        self.max_len = 0
        for label in LABELS:
            ids = tok.encode(label, add_special_tokens=False) + [self.eos]
            self.max_len = max(self.max_len, len(ids))
            for k in range(len(ids)):
                self.next.setdefault(tuple(ids[:k]), set()).add(ids[k])
        self.sets = {k: torch.tensor(sorted(v)) for k, v in self.next.items()}

    def allowed(self, prefix):
        """Allowed next tokens after prefix, or None when the prefix is finished (every token allowed)."""
        return self.sets.get(tuple(prefix))


class TrieProcessor(LogitsProcessor):
    """Masks, at each generated position, the tokens the trie forbids after the completion so far."""

    def __init__(self, trie, prompt_len):
        self.trie, self.start = trie, prompt_len

    def __call__(self, input_ids, scores):
        mask = torch.ones_like(scores, dtype=torch.bool)
        for b in range(input_ids.size(0)):
            ok = self.trie.allowed(input_ids[b, self.start:].tolist())
            if ok is None:
                mask[b] = False
            else:
                mask[b, ok] = False
        return scores.masked_fill(mask, float("-inf"))


def constrain_generate(model, trie):
    """Makes model.generate sample under the trie (the TRL side of constrained decoding)."""
    generate = model.generate

    def constrained(*args, **kwargs):
        ids = kwargs["input_ids"] if "input_ids" in kwargs else args[0]
        procs = LogitsProcessorList(kwargs.pop("logits_processor", None) or [])
        procs.append(TrieProcessor(trie, ids.size(1)))
        return generate(*args, logits_processor=procs, **kwargs)

    model.generate = constrained


def allowed_mask(trie, completion_ids, vocab):
    """[B, K, V] bool: True where the trie allows the token at that completion position."""
    b, k = completion_ids.shape
    mask = torch.zeros(b, k, vocab, dtype=torch.bool)
    ids = completion_ids.tolist()
    for i in range(b):
        for j in range(k):
            ok = trie.allowed(ids[i][:j])
            if ok is None:
                mask[i, j] = True
            else:
                mask[i, j, ok] = True
    return mask


class ConstrainedGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose log-probabilities and entropies are those of the constrained distribution."""

    def __init__(self, *args, trie=None, replay=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.trie, self.replay = trie, replay

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep,
                                           batch_size=None, compute_entropy=False, compute_aux_loss=False, **_):
        batch_size = batch_size or input_ids.size(0)
        logps, ents = [], []
        for s in range(0, input_ids.size(0), batch_size):
            ids, am = input_ids[s:s + batch_size], attention_mask[s:s + batch_size]
            with self.accelerator.autocast():
                logits = model(input_ids=ids, attention_mask=am, logits_to_keep=logits_to_keep + 1).logits
            logits = logits[:, :-1, :]
            if logits.dtype != torch.float64:
                logits = logits.float()
            logits = logits / self.temperature
            comp = ids[:, -logits_to_keep:]
            mask = allowed_mask(self.trie, comp.cpu(), logits.size(-1)).to(logits.device)
            logits = logits.masked_fill(~mask, -1e9)
            logp = torch.log_softmax(logits, dim=-1)
            logps.append(torch.gather(logp, 2, comp.unsqueeze(-1)).squeeze(-1))
            if compute_entropy:
                ents.append(-(logp.exp() * logp).sum(-1))
        return torch.cat(logps), (torch.cat(ents) if compute_entropy else None), None

    def _generate_single_turn(self, prompt_ids, *args, **kwargs):
        if self.replay is not None:
            rows, self.replay = self.replay, None
            tok = self.processing_class
            got = [tok.decode(p) for p in prompt_ids]
            for g, r in zip(got, rows, strict=True):
                if r["prompt"] not in g:
                    raise SystemExit(f"poker.py: --replay: TRL's prompt\n{g!r}\ndoes not hold grpokit's\n{r['prompt']!r}")
            ids = [tok.encode(r["completion"], add_special_tokens=False) + [tok.eos_token_id] for r in rows]
            print(f"poker.py: step 1 replays grpokit's {len(ids)} completions: {[r['completion'] for r in rows]}")
            return ids, None
        return super()._generate_single_turn(prompt_ids, *args, **kwargs)


@torch.no_grad()
def evaluate(model, tok, trie, rows, batch=64):
    """Greedy constrained labels for the held-out rows: examples/poker's report."""
    model.eval()
    tok.padding_side = "left"
    preds = []
    for s in range(0, len(rows), batch):
        texts = [tok.apply_chat_template(r["prompt"], tokenize=False, add_generation_prompt=True)
                 for r in rows[s:s + batch]]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        out = model.generate(**enc, do_sample=False, max_new_tokens=trie.max_len,
                             logits_processor=LogitsProcessorList([TrieProcessor(trie, enc["input_ids"].size(1))]),
                             pad_token_id=tok.pad_token_id)
        preds += tok.batch_decode(out[:, enc["input_ids"].size(1):], skip_special_tokens=True)
    model.train()
    n = len(rows)
    conf = [[0] * 9 for _ in LABELS]
    per = {l: [0, 0] for l in LABELS}
    rew = 0.0
    for r, p in zip(rows, preds):
        t, g = r["answer"], parse_label(p)
        per[t][0] += 1
        if g is not None:
            conf[LABELS.index(t)][LABELS.index(g)] += 1
        if g == t:
            per[t][1] += 1
            rew += WEIGHTS[t]
    acc = {l: c / max(1, m) for l, (m, c) in per.items()}
    return {"accuracy": sum(c for _, c in per.values()) / n, "macro_accuracy": sum(acc.values()) / len(acc),
            "mean_reward": rew / n, "valid_share": sum(map(sum, conf)) / n, "per_class": acc, "confusion": conf}


def report(label, r):
    print(f"\n{label}:\n{'class':16s} {'accuracy':>8s}")
    for l in LABELS:
        print(f"{l:16s} {100 * r['per_class'][l]:7.1f}%")
    print(f"accuracy {100 * r['accuracy']:.1f}%  macro accuracy {100 * r['macro_accuracy']:.1f}%  "
          f"mean reward {r['mean_reward']:.3f}  valid labels {100 * r['valid_share']:.1f}%")
    print("%-16s" % "true \\ predicted" + "".join(f" {a:>6s}" for a in ABBREV))
    for l, row in zip(LABELS, r["confusion"]):
        print(f"{l:16s}" + "".join(f" {v:6d}" for v in row))


def main():
    ap = cli.parser(__doc__, "poker.yaml", "examples/poker")
    ap.add_argument("--replay", help="grpokit's rollouts.jsonl: step 1 trains on its step-1 completions")
    ap.add_argument("--no-eval", action="store_true", help="skip the held-out evaluations")
    ap.add_argument("--eval-n", type=int, default=0, help="evaluate only the first N held-out hands (0: the config's eval)")
    ap.add_argument("--float64", action="store_true",
                    help="load and train the model in float64 (a reference for the first step's float32 values)")
    ap.add_argument("--seed", type=int, help="override the config's seed (give examples/poker the same -seed, for -rows too)")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    c = yaml.safe_load(open(a.config))
    if a.seed is not None:
        c["seed"] = a.seed
    os.makedirs(a.out, exist_ok=True)

    rows = [json.loads(l) for l in open(a.rows)]
    train = [{"prompt": r["prompt"], "answer": r["answer"]} for r in rows if r["split"] == "train"]
    held = [r for r in rows if r["split"] == "eval"][:a.eval_n or c["eval"]]
    if len(train) < c["max_steps"] * c["prompts"]:
        raise SystemExit(f"poker.py: {a.rows} has {len(train)} training rows, want {c['max_steps'] * c['prompts']}")

    tok = AutoTokenizer.from_pretrained(a.model)
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float64 if a.float64 else torch.float32)
    trie = Trie(tok)
    constrain_generate(model, trie)

    replay = None
    if a.replay:
        first = [json.loads(l) for l in open(a.replay)]
        replay = [r for r in first if r["step"] == 1]

    args = GRPOConfig(
        output_dir=a.out, max_steps=c["max_steps"], num_generations=c["num_generations"],
        per_device_train_batch_size=c["prompts"] * c["num_generations"], gradient_accumulation_steps=1,
        learning_rate=c["learning_rate"], lr_scheduler_type=c["lr_scheduler_type"],
        warmup_steps=min(20, c["max_steps"] // 10), beta=c["beta"], loss_type=c["loss_type"],
        scale_rewards=c["scale_rewards"], entropy_coef=c["entropy_coef"],
        max_completion_length=c["max_completion_length"], temperature=c["temperature"], top_p=c["top_p"],
        top_k=c["top_k"], seed=c["seed"], gradient_checkpointing=c["gradient_checkpointing"],
        shuffle_dataset=c["shuffle_dataset"], max_grad_norm=c["max_grad_norm"],
        bf16=False, use_cpu=True, logging_steps=1, save_steps=5, save_total_limit=1, report_to="none",
        log_completions=False, disable_dropout=True,
    )
    trainer = ConstrainedGRPOTrainer(model=model, args=args, reward_funcs=[correct],
                                     train_dataset=Dataset.from_list(train), processing_class=tok,
                                     trie=trie, replay=replay,
                                     callbacks=[Log(os.path.join(a.out, "metrics.jsonl"), a.stop_after)])
    last = get_last_checkpoint(a.out) if os.path.isdir(a.out) else None
    evals = os.path.join(a.out, "eval.jsonl")
    if not a.no_eval and last is None:
        t0 = time.perf_counter()
        r = evaluate(model, tok, trie, held)
        report(f"before training ({len(held)} held-out hands, greedy, {time.perf_counter() - t0:.0f} s)", r)
        with open(evals, "a") as f:
            f.write(json.dumps({"step": 0, **r}) + "\n")
    t0 = time.perf_counter()
    trainer.train(resume_from_checkpoint=last)
    print(f"poker.py: trained to step {trainer.state.global_step} in {time.perf_counter() - t0:.0f} s")
    if not a.no_eval:
        r = evaluate(model, tok, trie, held)
        report(f"after {trainer.state.global_step} GRPO steps", r)
        with open(evals, "a") as f:
            f.write(json.dumps({"step": trainer.state.global_step, **r}) + "\n")


if __name__ == "__main__":
    main()
