"""Markdown tables for docs/results/poker-real.md from the run folders.

    python bench/trl/pokerreport.py runs/poker-smollm2 runs/poker-smollm2-trl [runs/poker-smollm2-trl-replay]

grpokit's folder holds examples/poker's metrics.jsonl and eval.jsonl; TRL's
holds poker.py's. The optional third folder is poker.py --replay's: its
step 1 is compared with grpokit's step 1 (the same completions).
"""

import json
import statistics
import sys

LABELS = ["high card", "one pair", "two pair", "three of a kind", "straight", "flush", "full house",
          "four of a kind", "straight flush"]
ABBREV = ["high", "pair", "2pair", "trips", "str", "flush", "full", "quads", "sflush"]


def lines(path):
    try:
        return [json.loads(l) for l in open(path) if l.strip()]
    except FileNotFoundError:
        return []


def step_seconds(ms, key):
    v = [m[key] for m in ms if m.get(key) is not None and m["step"] > 1]
    return (statistics.median(v), len(v)) if v else (float("nan"), 0)


def main():
    go, trl = sys.argv[1], sys.argv[2]
    gm, tm = lines(f"{go}/metrics.jsonl"), lines(f"{trl}/metrics.jsonl")
    ge, te = lines(f"{go}/eval.jsonl"), lines(f"{trl}/eval.jsonl")
    print("## Held-out\n")
    cols = [(f"grpokit step {e['step']}", e) for e in (ge[:1] + ge[-1:] if len(ge) > 1 else ge)]
    cols += [(f"TRL step {e['step']}", e) for e in (te[:1] + te[-1:] if len(te) > 1 else te)]
    print("| | " + " | ".join(c for c, _ in cols) + " |")
    print("|---|" + "---:|" * len(cols))
    print("| mean reward | " + " | ".join(f"{e['mean_reward']:.3f}" for _, e in cols) + " |")
    print("| macro accuracy | " + " | ".join(f"{100 * e['macro_accuracy']:.1f}%" for _, e in cols) + " |")
    print("| accuracy | " + " | ".join(f"{100 * e['accuracy']:.1f}%" for _, e in cols) + " |")
    for l in LABELS:
        print(f"| {l} | " + " | ".join(f"{100 * e['per_class'][l]:.1f}%" for _, e in cols) + " |")
    for name, e in cols:
        print(f"\n{name}, true class (rows) against the label given (columns):\n")
        print("| | " + " | ".join(ABBREV) + " |")
        print("|---|" + "---:|" * len(ABBREV))
        for l, row in zip(LABELS, e["confusion"]):
            print(f"| {l} | " + " | ".join(str(v) for v in row) + " |")
    print("\n## Speed\n")
    g, gn = step_seconds(gm, "step_time")
    t, tn = step_seconds(tm, "wall_step_seconds")
    print(f"grpokit: median {g:.1f} s/step over steps 2-{gn + 1}; TRL: median {t:.1f} s/step over steps 2-{tn + 1}")
    if len(sys.argv) > 3:
        r = lines(f"{sys.argv[3]}/metrics.jsonl")[0]
        a = gm[0]
        print("\n## Step 1 on identical inputs\n")
        print("| | grpokit | TRL | relative difference |\n|---|---:|---:|---:|")
        for k in ["loss", "grad_norm", "entropy", "reward", "num_tokens"]:
            d = abs(a[k] - r[k]) / max(abs(a[k]), 1e-30)
            print(f"| {k} | {a[k]:.9g} | {r[k]:.9g} | {d:.1e} |")


if __name__ == "__main__":
    main()
