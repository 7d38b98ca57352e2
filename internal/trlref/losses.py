"""GRPO loss reference values from TRL 1.16's own code.

    /work/venv/bin/python internal/trlref/losses.py [OUT_DIR]

writes OUT_DIR/golden.json and OUT_DIR/golden.safetensors (default
grpo/testdata/trl-1.16). For every variant (loss_type, importance sampling
level, clipping, beta, bias-corrected KL, entropy mask and bonus, off-policy
mask, tool-masked tokens, mask_truncated_completions) and every advantage set
(scale_rewards, multi_objective_aggregation, reward weights, unscorable rows)
it builds a GRPOTrainer (trlref.make_trainer) on llama-tiny with its golden
LoRA adapter, runs TRL's _generate_and_score_completions on the fixed rollout
and TRL's _compute_loss, backpropagates, and stores what TRL computed: the
loss, the per-token terms, the advantages and the metrics TRL logs, and the
gradient of every LoRA matrix. Everything is float32 on the CPU, as TRL runs it.

The variants and the batch are those of golden/trl-1.10 (same names and
params), plus the ones below NEW. Off-policy variants give TRL the stored
old log-probs of golden/trl-1.10 (an input, copied bit for bit).
"""

import copy
import json
import os
import sys

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trlref as R  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "grpo", "testdata", "trl-1.16")

G110 = R.inputs110()
T110 = load_file(os.path.join(R.TRL110, "golden.safetensors"))
INP = G110["inputs"]
PROMPTS, COMPLETIONS = R.rows_from(G110)
OLD = T110["offpolicy.old_per_token_logps"]
ROWS = ["p0"] * 3 + ["p1"] * 3

# A tool mask (TRL's env_mask: 1 = a token the model generated, 0 = one a tool
# inserted), one entry per completion token.
TOOL_MASK = [[1] * len(c) for c in COMPLETIONS]
for r, pos in {1: [2, 3], 4: [3, 4, 5], 5: [1]}.items():
    for p in pos:
        TOOL_MASK[r][p] = 0

# Rewards with None (the function does not apply): row 2 unscorable by every
# function; in the second group only row 3 is scored by func0.
REWARDS_NONE = [1.0, 0.0, None, 0.25, None, None]
REWARDS2_NONE = [0.25, 1.0, None, None, 0.0, 0.5]

ADV_SETS = copy.deepcopy({k: v["params"] for k, v in G110["advantage_sets"].items()})
COLUMNS = {"rewards": INP["rewards"], "rewards2": INP["rewards2"],
           "rewards_none": REWARDS_NONE, "rewards2_none": REWARDS2_NONE}
# NEW: unscorable rows
ADV_SETS["unscorable_group"] = {"reward_columns": ["rewards_none"], "reward_weights": [1.0], "scale_rewards": "group",
                                "multi_objective_aggregation": "sum_then_normalize", "num_generations": 3}
ADV_SETS["unscorable_multi_batch"] = {"reward_columns": ["rewards_none", "rewards2_none"], "reward_weights": [1.0, 0.5],
                                      "scale_rewards": "batch", "multi_objective_aggregation": "sum_then_normalize",
                                      "num_generations": 3}
ADV_SETS["unscorable_norm_sum"] = {"reward_columns": ["rewards_none", "rewards2_none"], "reward_weights": [1.0, 0.5],
                                   "scale_rewards": "group", "multi_objective_aggregation": "normalize_then_sum",
                                   "num_generations": 3}

VARIANTS = {k: copy.deepcopy(v["params"]) for k, v in G110["variants"].items()}


def variant(base, name, **kw):
    p = copy.deepcopy(VARIANTS[base])
    p.update(kw)
    VARIANTS[name] = p


# NEW in this file (not in golden/trl-1.10):
variant("dapo-on-kl", "dapo-on-kl-biaskl", use_bias_correction_kl=True)  # TRL 1.16's default
variant("grpo-on-kl", "grpo-on-kl-biaskl", use_bias_correction_kl=True)
variant("seq-luspo-off-kl", "luspo-off-kl", importance_sampling_level="token")
variant("seq-luspo-off-kl", "seq-luspo-off-kl-biaskl", use_bias_correction_kl=True)
variant("dapo-off-kl", "dapo-off-kl-toolmask", tool_mask=True)
variant("grpo-off-kl", "grpo-off-kl-toolmask", tool_mask=True)
variant("seq-grpo-off-kl", "seq-grpo-off-kl-toolmask", tool_mask=True)
variant("dapo-off-kl-topent0p3", "dapo-off-kl-topent0p3-toolmask", tool_mask=True)
variant("dapo-off-kl", "dapo-off-kl-masktrunc", mask_truncated_completions=True)
variant("grpo-on-nokl", "grpo-on-nokl-masktrunc", mask_truncated_completions=True)
variant("dr_grpo-off-kl", "dr_grpo-off-kl-masktrunc-toolmask", mask_truncated_completions=True, tool_mask=True)
for s in ["unscorable_group", "unscorable_multi_batch", "unscorable_norm_sum"]:
    variant("dapo-off-kl", "dapo-off-kl-adv_" + s, advantages=s)
variant("grpo-off-kl", "grpo-off-kl-adv_unscorable_group", advantages="unscorable_group")
variant("sapo-off-kl", "sapo-off-kl-biaskl", use_bias_correction_kl=True)
variant("cispo-off-kl-epshigh1p2", "cispo-off-kl-epshigh1p2-biaskl", use_bias_correction_kl=True)
variant("vespo-off-kl", "vespo-off-kl-biaskl", use_bias_correction_kl=True)
variant("dapo-off-kl-entcoef", "dapo-off-kl-entcoef-biaskl", use_bias_correction_kl=True)

# GRPOConfig keys among a variant's params (the rest are the harness's layout).
CONFIG_KEYS = ["loss_type", "importance_sampling_level", "beta", "epsilon", "epsilon_high", "delta",
               "sapo_temperature_pos", "sapo_temperature_neg", "vespo_k_pos", "vespo_lambda_pos", "vespo_k_neg",
               "vespo_lambda_neg", "top_entropy_quantile", "off_policy_mask_threshold", "use_bias_correction_kl",
               "entropy_coef", "use_adaptive_entropy", "temperature", "max_completion_length", "num_iterations",
               "gradient_accumulation_steps", "mask_truncated_completions"]


def trainer_for(params, adv):
    cfg = {k: params[k] for k in CONFIG_KEYS if k in params}
    cfg.update(scale_rewards=adv["scale_rewards"], multi_objective_aggregation=adv["multi_objective_aggregation"],
               reward_weights=adv["reward_weights"], num_generations=adv["num_generations"])
    env = TOOL_MASK if params.get("tool_mask") else None
    rollout = R.Rollout(PROMPTS, COMPLETIONS, env)
    return R.make_trainer(cfg, rollout, [COLUMNS[c] for c in adv["reward_columns"]])


def nanlist(t):
    return [R.jsonfloat(x) for x in t.detach().double().flatten().tolist()]


def advantage_set(name, p):
    tr = trainer_for({}, p)
    out, loc = R.generation_batch(tr, ROWS)
    rewards = loc["rewards"]
    if "mean_grouped_rewards" in loc:
        baseline = loc["mean_grouped_rewards"]
    else:
        baseline = torch.nanmean(rewards).expand_as(rewards)
    m = R.metrics_of(tr)
    keep = {k: v for k, v in m.items() if k.startswith("reward") or k == "frac_reward_zero_std"}
    unscorable = loc["unscorable_mask"].tolist()
    return {"params": p, "advantages": nanlist(out["advantages"]), "aggregated_rewards": nanlist(rewards),
            "baseline": nanlist(baseline), "std_rewards": nanlist(loc["std_rewards"]), "unscorable": unscorable,
            "metrics": {k: R.jsonfloat(v) for k, v in keep.items()}}


def run_variant(name, params, tensors):
    adv = ADV_SETS[params["advantages"]]
    tr = trainer_for(params, adv)
    batch, _ = R.generation_batch(tr, ROWS)
    gen_metrics = set(R.metrics_of(tr))
    if params["old"] == "offpolicy":
        batch["old_per_token_logps"] = OLD.clone()
    with R.capture(R.grpo_module.GRPOTrainer._compute_loss, at_line="coef_2 = torch.clamp(coef_1") as calls:
        loss = tr._compute_loss(tr.model, batch)
    loss.backward()
    L = calls[0]["return"]
    pre = calls[0].get("line", L)
    m = R.metrics_of(tr)
    entry = {"params": params, "loss": float(loss.item()),
             "metrics": {k: R.jsonfloat(v) for k, v in m.items() if k not in gen_metrics},
             "num_items_in_batch": int(batch["num_items_in_batch"].item()),
             "completion_mask": batch["completion_mask"].tolist()}
    if "tool_mask" in batch:
        entry["tool_mask"] = batch["tool_mask"].tolist()
    stored = []

    def put(kind, t):
        t = R.f32(t)
        if kind == "per_token_loss" and t.shape[1] == 1:
            t = t.expand(-1, 8).contiguous()
        tensors[f"{name}.{kind}"] = t.clone()
        stored.append(kind)

    put("per_token_loss", L["per_token_loss"])
    put("coef_1", pre["coef_1"])
    if L.get("per_token_kl") is not None:
        put("per_token_kl", L["per_token_kl"])
    if L.get("entropy_mask") is not None:
        put("entropy_mask", L["entropy_mask"])
        entry["entropy_mask_count"] = int(L["entropy_mask"].sum().item())
    if L.get("off_policy_mask") is not None and params.get("off_policy_mask_threshold") is not None:
        put("off_policy_mask", L["off_policy_mask"])
        entry["off_policy_mask"] = L["off_policy_mask"].flatten().tolist()
    if L.get("phi_seq") is not None and params["loss_type"] == "vespo":
        put("phi_seq", L["phi_seq"])
        entry["phi_seq"] = L["phi_seq"].flatten().tolist()
    for k, g in R.lora_grads(tr.model).items():
        tensors[f"{name}.grad.{k}"] = R.f32(g)
    stored.append("grad.*")
    entry["tensors"] = stored
    if name == "dapo-on-kl":
        tensors["per_token_logps"] = R.f32(L["per_token_logps"])
        tensors["ref_per_token_logps"] = R.f32(batch["ref_per_token_logps"])
        tensors["entropies"] = R.f32(L["entropies"])
    return entry


def main():
    os.makedirs(OUT, exist_ok=True)
    tensors = {"offpolicy.old_per_token_logps": OLD.clone()}
    sets = {name: advantage_set(name, p) for name, p in sorted(ADV_SETS.items())}
    variants = {}
    for name in sorted(VARIANTS):
        variants[name] = run_variant(name, VARIANTS[name], tensors)
        print(f"{name:40s} loss {variants[name]['loss']:+.8f}", flush=True)
    inputs = {k: INP[k] for k in ["num_generations", "eos_token_id", "prompt_ids", "prompt_mask", "completion_ids",
                                  "completion_mask", "rewards", "rewards2", "reward_weights_multi",
                                  "max_completion_length"]}
    inputs.update(num_items_in_batch=INP["num_items_in_batch"], rewards_none=REWARDS_NONE,
                  rewards2_none=REWARDS2_NONE, tool_mask=TOOL_MASK, temperature=1.0)
    doc = {
        "reference": "TRL's own code: GRPOTrainer._generate_and_score_completions and _compute_loss, "
                     "run by internal/trlref/losses.py",
        "versions": R.VERSIONS,
        "base_case": "llama-tiny (shared golden), its lora/ adapter in the trainer's default adapter",
        "compute": "float32, CPU, 1 thread, 1 process, gradient_accumulation_steps 1",
        "inputs": inputs,
        "advantage_sets": sets,
        "variants": variants,
    }
    with open(os.path.join(OUT, "golden.json"), "w") as fh:
        json.dump(doc, fh, indent=1, sort_keys=True)
        fh.write("\n")
    save_file({k: v.contiguous() for k, v in sorted(tensors.items())}, os.path.join(OUT, "golden.safetensors"),
              metadata={"format": "pt"})
    print("wrote", OUT, len(variants), "variants", len(sets), "advantage sets", len(tensors), "tensors")


if __name__ == "__main__":
    main()
