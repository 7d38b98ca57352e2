"""Markdown tables for docs/results/poker-real.md from the run folders.

    python bench/trl/pokerreport.py "grpokit seed 1=runs/real-s1" "grpokit seed 2=runs/real-s2" \\
        "TRL seed 1=runs/trl-s1" [--replay grpokit-run=replay-run]

Each run is NAME=FOLDER: examples/poker's or poker.py's output (metrics.jsonl,
eval.jsonl). --replay compares step 1 of a grpokit run with poker.py
--replay's step 1 on the same completions.
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


def step_seconds(ms):
    key = "step_time" if any("step_time" in m for m in ms) else "wall_step_seconds"
    v = [m[key] for m in ms if m.get(key) is not None and m["step"] > 1]
    return (statistics.median(v), len(v)) if v else (float("nan"), 0)


def main():
    args, replay = [], None
    it = iter(sys.argv[1:])
    for a in it:
        if a == "--replay":
            replay = next(it).split("=", 1)
        else:
            args.append(a.split("=", 1))
    runs = [(name, lines(f"{d}/metrics.jsonl"), lines(f"{d}/eval.jsonl")) for name, d in args]
    print("## Held-out\n")
    cols = []
    for name, _, ev in runs:
        if ev:
            cols.append((f"{name}, step {ev[0]['step']}", ev[0]))
        if len(ev) > 1:
            cols.append((f"{name}, step {ev[-1]['step']}", ev[-1]))
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
    for name, ms, _ in runs:
        s, n = step_seconds(ms)
        print(f"- {name}: median {s:.1f} s/step over steps 2-{n + 1}")
    if replay:
        a = lines(f"{replay[0]}/metrics.jsonl")[0]
        r = lines(f"{replay[1]}/metrics.jsonl")[0]
        print("\n## Step 1 on identical inputs\n")
        print("| | grpokit | TRL | relative difference |\n|---|---:|---:|---:|")
        for k in ["loss", "grad_norm", "entropy", "reward", "num_tokens"]:
            d = abs(a[k] - r[k]) / max(abs(a[k]), 1e-30)
            print(f"| {k} | {a[k]:.9g} | {r[k]:.9g} | {d:.1e} |")


if __name__ == "__main__":
    main()
