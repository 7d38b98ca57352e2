"""One GRPO optimizer step end to end through TRL 1.16's GRPOTrainer.train().

    /work/venv/bin/python internal/trlref/step.py [OUT_DIR]

writes OUT_DIR/step.json and OUT_DIR/step.safetensors (default
grpo/testdata/trl-1.16): llama-tiny (random weights, real Llama config),
full fine-tuning in float32 on the CPU, one step of `trainer.train()` with
max_steps 1 on the fixed rollout of golden/trl-1.10 (two prompts × 3
completions, fixed token ids through TRL's rollout_func, nothing sampled) and
its fixed rewards; and step-lora.json / step-lora.safetensors, the same step
training llama-tiny's golden LoRA adapter (the reference model is the base,
the adapter disabled, as TRL does for a PEFT model). Stored: the loss TRL computed, the gradient norm and every
value TRL logged at that step (their names are the metric names), every
weight after the AdamW step, and the clipped gradient it stepped with
(grad.NAME, read from AdamW's first moment).
"""

import json
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import TrainerCallback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trlref as R  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "grpo", "testdata", "trl-1.16")

# GRPOConfig settings of the step (the rest are GRPOConfig's defaults, and the
# harness's: CPU, float32, batch 6 = 2 prompts × 3 generations, GA 1).
CONFIG = dict(
    learning_rate=1e-3, beta=0.04, max_steps=1, optim="adamw_torch", weight_decay=0.01,
    max_prompt_length=None,
)


class Logs(TrainerCallback):
    def __init__(self):
        self.logs = []

    def on_log(self, args, state, control, logs=None, **kw):
        self.logs.append(dict(logs or {}))


def run(name, lora, **extra):
    g = R.inputs110()
    prompts, completions = R.rows_from(g)
    cfg = {k: v for k, v in CONFIG.items() if k != "max_prompt_length"}
    cfg.update(extra)
    tr = R.make_trainer(cfg, R.Rollout(prompts, completions), [g["inputs"]["rewards"]], lora=lora)
    logs = Logs()
    tr.add_callback(logs)
    with R.capture(R.grpo_module.GRPOTrainer._compute_loss) as calls:
        tr.train()
    assert len(calls) == tr.args.gradient_accumulation_steps, len(calls)
    step_logs = [l for l in logs.logs if "loss" in l]
    assert len(step_logs) == 1, logs.logs
    log = step_logs[0]
    # The step's loss: its micro-batches' losses (each already scaled for
    # the accumulation) added up, as the Trainer logs it.
    loss = float(sum(c["return"]["loss"].item() for c in calls))
    # lm_head.weight is embed_tokens.weight (tied), stored once. With LoRA
    # only the adapter trains: its matrices by their golden names
    # (layers.{i}.self_attn.{q,v}_proj.lora_{A,B}).
    names = {}
    for n, p in tr.model.named_parameters():
        if not p.requires_grad or n.endswith("lm_head.weight"):
            continue
        names[id(p)] = R.lora_name(n) if lora else n
    weights = {names[id(p)]: R.f32(p).clone() for n, p in tr.model.named_parameters() if id(p) in names}
    # The clipped gradient AdamW stepped with: its first moment after one
    # step is (1 - beta1) * g.
    opt = getattr(tr.optimizer, "optimizer", tr.optimizer)
    for p, st in opt.state.items():
        if id(p) in names:
            weights["grad." + names[id(p)]] = R.f32(st["exp_avg"] / (1 - tr.args.adam_beta1)).clone()
    # step_time is a wall-clock time: its name is kept, its value is not.
    log["step_time"] = None
    doc = {
        "reference": "TRL's own code: GRPOTrainer.train() for one step, run by internal/trlref/step.py",
        "lora": lora,
        "versions": R.VERSIONS,
        "config": {**CONFIG, "per_device_train_batch_size": tr.args.per_device_train_batch_size, "num_generations": 3,
                   "max_completion_length": 8, "gradient_accumulation_steps": tr.args.gradient_accumulation_steps,
                   "steps_per_generation": tr.args.steps_per_generation, "entropy_coef": tr.args.entropy_coef,
                   "loss_type": tr.loss_type,
                   "use_bias_correction_kl": tr.args.use_bias_correction_kl, "epsilon": tr.args.epsilon,
                   "max_grad_norm": tr.args.max_grad_norm, "adam_beta1": tr.args.adam_beta1,
                   "adam_beta2": tr.args.adam_beta2, "adam_epsilon": tr.args.adam_epsilon,
                   "lr_scheduler_type": str(tr.args.lr_scheduler_type.value), "seed": tr.args.seed},
        "rewards": g["inputs"]["rewards"],
        "loss": loss,
        "grad_norm": float(log["grad_norm"]),
        "logged": {k: None if v is None else R.jsonfloat(v) for k, v in sorted(log.items())},
        "weights": sorted(k for k in weights if not k.startswith("grad.")),
    }
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, name + ".json"), "w") as fh:
        json.dump(doc, fh, indent=1, sort_keys=True)
        fh.write("\n")
    save_file(dict(sorted(weights.items())), os.path.join(OUT, name + ".safetensors"), metadata={"format": "pt"})
    print(name, json.dumps({k: doc[k] for k in ["loss", "grad_norm"]}), sorted(log))


def identity(batch):
    return batch


def main():
    run("step", lora=False)
    run("step-lora", lora=True)
    # Two accumulated micro-batches of 3 rows, with the entropy bonus. TRL
    # shuffles the generation batch (a random permutation) before splitting
    # it; here the permutation is fixed to the identity, as grpokit leaves a
    # generation batch that one optimizer step consumes in order.
    shuffle = R.grpo_module.shuffle_sequence_dict
    R.grpo_module.shuffle_sequence_dict = identity
    try:
        run("step-lora-ga2", lora=True, per_device_train_batch_size=3, gradient_accumulation_steps=2, entropy_coef=0.01)
    finally:
        R.grpo_module.shuffle_sequence_dict = shuffle


if __name__ == "__main__":
    main()
