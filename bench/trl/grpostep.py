"""TRL's GRPOTrainer on bench/grpostep's step, timed step by step.

The step of bench/grpostep's "full" and "lora" variants, run by TRL 1.16's
GRPOTrainer on a Hugging Face folder: 4 prompts x G=4 of exactly 80 prompt
tokens, 6 sampled tokens (forced: min_new_tokens = max_completion_length),
a reward of fixed pseudo-random scores (a step's cost does not depend on
them), loss_type dapo, beta 0, AdamW at a constant 1e-6, max_grad_norm 1,
float32 on the CPU; "lora" trains a PEFT adapter of r 16, alpha 32 on every
linear layer of the decoder. The seconds are TRL's own `step_time` metric
(GRPOTrainer.training_step: generation, scoring, forward, backward; the
optimizer step follows it), plus the wall time from step start to step end
(the optimizer included), the figure compared.

Environment: MODEL (the folder; required), VARIANT (full or lora, default
full), STEPS (timed steps after the first, default 3), THREADS (torch
threads, default every core), CHECKPOINTING=1 (gradient checkpointing; by
default off, as bench/grpostep's -gradient-checkpointing=false).

Prints, to stdout, JSON in bench/torch_grpostep.py's layout ("label",
"info", "seconds": {first, step, trl_step_time}, "memory": {peak_rss_mb}),
which `bench/grpostep -trl FILE` reads; progress goes to stderr.
"""

import contextlib
import json
import os
import platform
import random
import resource
import statistics
import sys
import tempfile
import time

import torch
import transformers
import trl
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from trl import GRPOConfig, GRPOTrainer

PROMPTS, G, PROMPT_LEN, NEW_TOKENS, LR = 4, 4, 80, 6, 1e-6


def prompts(tok, n, seed=11):
    """n texts of exactly PROMPT_LEN tokens: words the tokenizer keeps as one token each."""
    words = sorted({t for t in tok.get_vocab() if t.startswith("Ġ") and t[1:].isalpha() and t[1:].islower()})
    words = [tok.convert_tokens_to_string([w]) for w in words]
    out = []
    r = random.Random(seed)
    while len(out) < n:
        text = "".join(r.choice(words) for _ in range(PROMPT_LEN)).lstrip()
        if len(tok(text)["input_ids"]) == PROMPT_LEN:  # as GRPOTrainer tokenizes a plain prompt
            out.append(text)
    return out


def noise(prompts, completions, **kw):
    """Fixed pseudo-random scores, so that advantages are not all zero."""
    noise.calls = getattr(noise, "calls", 0) + 1
    r = random.Random(noise.calls)
    return [r.random() for _ in completions]


class StepClock(TrainerCallback):
    """The wall time of each optimizer step, start to end."""

    def __init__(self):
        self.t, self.steps = None, []

    def on_step_begin(self, args, state, control, **kw):
        self.t = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        self.steps.append(time.perf_counter() - self.t)
        print(f"trl step {len(self.steps)}: {self.steps[-1]:.2f} s", file=sys.stderr)


def main():
    model_dir = os.environ["MODEL"]
    variant = os.environ.get("VARIANT", "full")
    if variant not in ("full", "lora"):
        raise SystemExit(f"trl/grpostep.py: VARIANT={variant}: want full or lora")
    steps = int(os.environ.get("STEPS", "3"))
    threads = int(os.environ.get("THREADS") or os.cpu_count())
    torch.set_num_threads(threads)
    info = (f"trl {trl.__version__}, transformers {transformers.__version__}, torch {torch.__version__} eager, "
            f"{threads} threads, python {platform.python_version()}")
    print(info, file=sys.stderr)

    tok = AutoTokenizer.from_pretrained(model_dir)
    rows = [{"prompt": p} for p in prompts(tok, PROMPTS * (1 + steps))]
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    peft = None
    if variant == "lora":
        from peft import LoraConfig
        peft = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, bias="none", task_type="CAUSAL_LM",
                          target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    clock = StepClock()
    with tempfile.TemporaryDirectory() as out:
        args = GRPOConfig(
            output_dir=out, max_steps=1 + steps, num_generations=G, per_device_train_batch_size=PROMPTS * G,
            gradient_accumulation_steps=1, learning_rate=LR, lr_scheduler_type="constant", warmup_steps=0,
            beta=0.0, loss_type="dapo", max_completion_length=NEW_TOKENS,
            generation_kwargs={"min_new_tokens": NEW_TOKENS}, temperature=1.0, top_p=1.0, top_k=0, seed=1,
            gradient_checkpointing=os.environ.get("CHECKPOINTING") == "1", shuffle_dataset=False,
            max_grad_norm=1.0, bf16=False, use_cpu=True, logging_steps=1, save_strategy="no", report_to="none",
            log_completions=False, disable_dropout=True, disable_tqdm=True,
        )
        trainer = GRPOTrainer(model=model, args=args, reward_funcs=noise, train_dataset=Dataset.from_list(rows),
                              processing_class=tok, peft_config=peft, callbacks=[clock])
        for cb in (ProgressCallback, PrinterCallback):  # StepClock prints each step's time
            trainer.remove_callback(cb)
        with contextlib.redirect_stdout(sys.stderr):  # the Trainer prints its logs; stdout is the JSON's
            trainer.train()
        logged = [h["step_time"] for h in trainer.state.log_history if "step_time" in h]
        tokens = [h["completions/mean_length"] for h in trainer.state.log_history if "completions/mean_length" in h]
    if len(clock.steps) != 1 + steps:
        raise SystemExit(f"trl/grpostep.py: {len(clock.steps)} steps timed, want {1 + steps}")
    if any(t != NEW_TOKENS for t in tokens):
        raise SystemExit(f"trl/grpostep.py: completions of mean length {tokens}, want {NEW_TOKENS} (forced)")
    res = {"first": clock.steps[0], "step": statistics.median(clock.steps[1:])}
    if len(logged) == 1 + steps:
        res["trl_step_time"] = statistics.median(logged[1:])
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    json.dump({"label": f"TRL {trl.__version__}", "info": info, "seconds": res, "memory": {"peak_rss_mb": rss}},
              sys.stdout)


if __name__ == "__main__":
    main()
