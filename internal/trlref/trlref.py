"""Shared harness: TRL 1.16's own GRPOTrainer on llama-tiny, with generation
replaced by fixed completions.

Nothing here re-implements TRL's math. A GRPOTrainer is built the normal way
(GRPOConfig, a PEFT LoraConfig, reward functions); generation goes through
TRL's documented `rollout_func` hook, which returns fixed prompt and
completion ids (and a tool mask, TRL's `env_mask`), so nothing is sampled.
Advantages, reward metrics, log-probs, the loss and its metrics are then
TRL's: `_generate_and_score_completions`, `_compute_loss`, `training_step`.
The tensors that live only inside those functions (per-token loss, importance
weights, KL, masks, group means and stds) are read from their frames with a
trace hook, without changing the code.
"""

import contextlib
import inspect
import json
import os
import sys
import tempfile
import warnings

import numpy as np
import torch

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
warnings.filterwarnings("ignore")

import datasets  # noqa: E402
import peft  # noqa: E402
import transformers  # noqa: E402
import trl  # noqa: E402
from peft import LoraConfig, set_peft_model_state_dict  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from tokenizers import Tokenizer, models, pre_tokenizers, decoders  # noqa: E402
from transformers import LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402
from trl.trainer import grpo_trainer as grpo_module  # noqa: E402

VERSIONS = {
    "trl": trl.__version__,
    "transformers": transformers.__version__,
    "peft": peft.__version__,
    "torch": torch.__version__,
    "datasets": datasets.__version__,
    "numpy": np.__version__,
}

SHARED = os.environ.get("GRPOKIT_SHARED", "/work/shared")
LLAMA = os.path.join(SHARED, "golden", "llama-tiny")
TRL110 = os.path.join(SHARED, "golden", "trl-1.10")

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)


def tokenizer():
    """A word-level tokenizer over llama-tiny's 512 ids: <pad> 0, <s> 1, </s> 2,
    then t3 … t511. It only decodes completions for the reward functions."""
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2}
    vocab.update({f"t{i}": i for i in range(3, 512)})
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins with spaces
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>")


def inputs110():
    """llama-tiny's GRPO batch (the integer inputs of golden/trl-1.10)."""
    with open(os.path.join(TRL110, "golden.json")) as fh:
        return json.load(fh)


def rows_from(g):
    """Per row: prompt ids (unpadded), completion ids (up to and including the
    first EOS, as TRL's _generate_single_turn cuts them)."""
    i = g["inputs"]
    prompts, completions = [], []
    for p, pm, c, cm in zip(i["prompt_ids"], i["prompt_mask"], i["completion_ids"], i["completion_mask"]):
        prompts.append([x for x, m in zip(p, pm) if m])
        completions.append([x for x, m in zip(c, cm) if m])
    return prompts, completions


class Rollout:
    """TRL's rollout_func: returns the fixed rows in TRL's RepeatSampler order
    (each prompt num_generations times in a row)."""

    def __init__(self, prompt_ids, completion_ids, env_mask=None):
        self.prompt_ids, self.completion_ids, self.env_mask = prompt_ids, completion_ids, env_mask
        self.calls = 0

    def __call__(self, prompts, trainer):
        n = len(prompts)
        assert n == len(self.prompt_ids), (n, len(self.prompt_ids))
        self.calls += 1
        out = {"prompt_ids": [list(p) for p in self.prompt_ids],
               "completion_ids": [list(c) for c in self.completion_ids], "logprobs": None}
        if self.env_mask is not None:
            out["env_mask"] = [list(m) for m in self.env_mask]
        return out


def reward_funcs(columns):
    """One reward function per column of fixed per-row rewards (None: the
    function does not apply to that row), named func0, func1, …"""
    funcs = []
    for k, col in enumerate(columns):
        def f(prompts, completions, completion_ids, _col=col, **kw):
            assert len(completions) == len(_col)
            return list(_col)
        f.__name__ = f"func{k}"
        funcs.append(f)
    return funcs


def load_lora(model):
    """The golden adapter of llama-tiny into the trainer's "default" adapter."""
    sd = load_file(os.path.join(LLAMA, "lora", "adapter_model.safetensors"))
    res = set_peft_model_state_dict(model, sd)
    bad = [k for k in res.unexpected_keys if "lora" in k]
    assert not bad, bad


def make_trainer(cfg, rollout, rewards, lora=True, out_dir=None, model=None):
    """A GRPOTrainer with the fixed rollout and rewards; cfg are GRPOConfig
    keyword arguments on top of the harness's (CPU, float32, 1 process)."""
    base = dict(
        output_dir=out_dir or tempfile.mkdtemp(prefix="trlref-"),
        use_cpu=True, bf16=False, report_to="none", logging_steps=1, save_strategy="no",
        per_device_train_batch_size=6, num_generations=3, max_completion_length=8,
        gradient_accumulation_steps=1, gradient_checkpointing=False, shuffle_dataset=False,
        seed=0, dataloader_num_workers=0,
    )
    base.update(cfg)
    args = GRPOConfig(**base)
    if model is None:
        model = LlamaForCausalLM.from_pretrained(LLAMA, dtype=torch.float32, attn_implementation="eager")
    ds = datasets.Dataset.from_dict({"prompt": ["p0", "p1"]})
    peft_config = None
    if lora:
        peft_config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0,
                                 bias="none", task_type="CAUSAL_LM")
    tr = GRPOTrainer(model=model, reward_funcs=reward_funcs(rewards), args=args, train_dataset=ds,
                     processing_class=tokenizer(), peft_config=peft_config, rollout_func=rollout)
    if lora:
        load_lora(tr.model)
    tr.model.train()
    if not hasattr(tr, "current_gradient_accumulation_steps"):
        tr.current_gradient_accumulation_steps = args.gradient_accumulation_steps
    return tr


@contextlib.contextmanager
def capture(func, at_line=None):
    """Records the locals of every call of func (a function object): at its
    return, and also just before the first line whose source contains
    at_line, if given. Yields a list of dicts {"return": locals, "line":
    locals}."""
    code = func.__code__
    line_no = None
    if at_line is not None:
        src, first = inspect.getsourcelines(func)
        for k, s in enumerate(src):
            if at_line in s:
                line_no = first + k
                break
        assert line_no is not None, at_line
    calls = []

    def local(frame, event, arg):
        if event == "line" and frame.f_lineno == line_no and "line" not in calls[-1]:
            calls[-1]["line"] = dict(frame.f_locals)
        elif event == "return":
            calls[-1]["return"] = dict(frame.f_locals)
        return local

    def glob(frame, event, arg):
        if event == "call" and frame.f_code is code:
            calls.append({})
            return local
        return None

    old = sys.gettrace()
    sys.settrace(glob)
    try:
        yield calls
    finally:
        sys.settrace(old)


def generation_batch(tr, prompts):
    """TRL's _generate_and_score_completions on the dataset rows (prompt text
    only; the rollout supplies the ids), with the locals at the advantages'
    last step."""
    rows = [{"prompt": p} for p in prompts]
    with capture(grpo_module.GRPOTrainer._generate_and_score_completions,
                 at_line="advantages = torch.nan_to_num(advantages, nan=0.0)") as calls:
        out = tr._generate_and_score_completions(rows)
    return out, calls[0]["line"]


def lora_name(name):
    """base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight →
    layers.0.self_attn.q_proj.lora_A (the golden files' name)."""
    parts = name.split(".")
    i = parts.index("layers")
    return ".".join(parts[i:i + 5])


def lora_grads(model):
    """d loss / d LoRA matrix by golden name: layers.{i}.self_attn.{q,v}_proj.lora_{A,B}."""
    out = {}
    for name, p in model.named_parameters():
        if "lora_" in name and p.requires_grad:
            out[lora_name(name)] = p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
    return out


def f32(x):
    return x.detach().to(torch.float32).contiguous()


def metrics_of(tr, mode="train"):
    """The trainer's accumulated metrics: name → last value."""
    return {k: float(v[-1]) for k, v in tr._metrics[mode].items() if len(v)}


def jsonfloat(x):
    x = float(x)
    if x != x:
        return None
    return x
