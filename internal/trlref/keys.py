"""Write every field of TRL's GRPOConfig (TrainingArguments included), TRL's
ModelConfig and peft's LoraConfig, with its type and default, as read from the
installed packages (see README.md for the pinned versions).

    /work/venv/bin/python internal/trlref/keys.py [OUT_DIR]

OUT_DIR defaults to internal/trlkeys/testdata. Each line of a .tsv file is
`name <TAB> type <TAB> default as JSON`. The default is the dataclass field's
declared default (default_factory called), except where the config's own
__post_init__ turns a declared None into a fixed value on every machine (bf16:
None becomes `not fp16`, i.e. true); those lines carry the resolved value and
the declared one is listed in the header.
"""

import dataclasses
import json
import math
import os
import sys
import typing

import peft
import transformers
import trl
from peft import LoraConfig
from trl import GRPOConfig, ModelConfig

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "trlkeys", "testdata")

# Declared None defaults that GRPOConfig.__post_init__ resolves the same way on
# every machine (trl/trainer/grpo_config.py): bf16 = not fp16.
RESOLVED = {"GRPOConfig": {"bf16": True}}


def jsonable(v):
    if dataclasses.is_dataclass(v):
        v = dataclasses.asdict(v)
    if hasattr(v, "value") and not isinstance(v, (int, float, str, bool)):  # enums
        v = v.value
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if isinstance(v, (set, frozenset, tuple)):
        v = sorted(v) if isinstance(v, (set, frozenset)) else list(v)
    if isinstance(v, list):
        return [jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    return v


def type_name(t):
    if isinstance(t, str):
        return t
    s = repr(t) if not isinstance(t, type) else t.__name__
    return s.replace("typing.", "").replace("NoneType", "None")


def fields(cls):
    out = []
    hints = typing.get_type_hints(cls, include_extras=False) if cls is not LoraConfig else {}
    for f in dataclasses.fields(cls):
        if not f.init or f.name.startswith("_"):
            continue
        if f.default is not dataclasses.MISSING:
            d = f.default
        elif f.default_factory is not dataclasses.MISSING:
            d = f.default_factory()
        else:
            d = None
        d = RESOLVED.get(cls.__name__, {}).get(f.name, d)
        out.append((f.name, type_name(hints.get(f.name, f.type)), json.dumps(jsonable(d), sort_keys=True)))
    return out


def write(name, cls, note):
    path = os.path.join(OUT, name)
    with open(path, "w") as fh:
        fh.write(f"# {cls.__module__}.{cls.__name__}: every dataclass field, its type and default (JSON).\n")
        fh.write(f"# {note}\n")
        fh.write(f"# Written by internal/trlref/keys.py from trl {trl.__version__}, transformers {transformers.__version__}, "
                 f"peft {peft.__version__}.\n")
        for k, t, d in fields(cls):
            fh.write(f"{k}\t{t}\t{d}\n")
    print(path, len(fields(cls)), "fields")


write("trl-grpo-config.tsv", GRPOConfig,
      "GRPOConfig with the transformers TrainingArguments fields it extends; bf16 is declared None and "
      "__post_init__ makes it `not fp16` (true).")
write("trl-model-config.tsv", ModelConfig, "TRL's ModelConfig (the model: section of a `trl grpo` config).")
write("peft-lora-config.tsv", LoraConfig, "peft's LoraConfig, which ModelConfig's lora_* keys fill (get_peft_config).")
