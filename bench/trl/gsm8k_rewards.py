"""The five rewards of the GRPO GSM8K seed as envs/gsm8k defines them, for TRL.

They follow envs/gsm8k exactly, which differs from the seed's Python in
two places: the integer reward accepts a leading minus, and the strict
format allows reasoning and answer to span lines and checks that each tag
occurs once. Each takes TRL's reward-function arguments (completions as
text or as chat messages, the dataset's answer column).

    python bench/trl/gsm8k_rewards.py > envs/gsm8k/testdata/python_rewards.json

writes the scores of a set of hand-picked completions, which a Go test of
envs/gsm8k compares with its own.
"""

import json
import re

STRICT = re.compile(r"<reasoning>\n.*?\n</reasoning>\n<answer>\n.*?\n</answer>\n\n?", re.S)
SOFT = re.compile(r"[\t\n\f\r ]*<reasoning>.*?</reasoning>[\t\n\f\r ]*<answer>.*?</answer>[\t\n\f\r ]*", re.S)
INT = re.compile(r"-?[0-9]+")


def text_of(c):
    return c[-1]["content"] if isinstance(c, list) else c


def xml_answer(text):
    """envs/gsm8k.XMLAnswer (the seed's extract_xml_answer)."""
    return text.split("<answer>")[-1].split("</answer>")[0].strip()


def xmlcount(completions, **_):
    out = []
    for c in completions:
        t, n = text_of(c), 0.0
        if t.count("<reasoning>\n") == 1:
            n += 0.125
        if t.count("\n</reasoning>\n") == 1:
            n += 0.125
        if t.count("\n<answer>\n") == 1:
            n += 0.125 - len(t.split("\n</answer>\n")[-1]) * 0.001
        if t.count("\n</answer>") == 1:
            n += 0.125 - (len(t.split("\n</answer>")[-1]) - 1) * 0.001
        out.append(n)
    return out


def soft_format(completions, **_):
    return [0.5 if SOFT.fullmatch(text_of(c)) else 0.0 for c in completions]


def strict_format(completions, **_):
    out = []
    for c in completions:
        t = text_of(c)
        once = all(t.count(tag) == 1 for tag in ("<reasoning>", "</reasoning>", "<answer>", "</answer>"))
        out.append(0.5 if once and STRICT.fullmatch(t) else 0.0)
    return out


def int_(completions, **_):
    return [0.5 if INT.fullmatch(xml_answer(text_of(c))) else 0.0 for c in completions]


int_.__name__ = "int"


def correctness(completions, answer, **_):
    return [2.0 if xml_answer(text_of(c)) == a else 0.0 for c, a in zip(completions, answer)]


REWARDS = [xmlcount, soft_format, strict_format, int_, correctness]


CASES = [
    ("<reasoning>\nA\nB\n</reasoning>\n<answer>\n72\n</answer>\n", "72"),
    ("<reasoning>\nA\n</reasoning>\n<answer>\n72\n</answer>\n\n", "72"),
    ("<reasoning>\nA\n</reasoning>\n<answer>\n72\n</answer>\n\n\n", "72"),
    ("<reasoning>\nA\n</reasoning>\n<answer>\n72\n</answer>", "72"),
    ("  <reasoning>x</reasoning> <answer>-5</answer>\n", "-5"),
    ("text <reasoning>\nq\n</reasoning>\n<answer>\n72\n</answer>\nmore words", "72"),
    ("<reasoning>\nq\n</reasoning>\n<answer>\n 1,200 \n</answer>\n", "1200"),
    ("<reasoning>\nq\n</reasoning>\n<answer>\n$18\n</answer>\n", "18"),
    ("<reasoning>\nq\n</reasoning>\n<answer>\n18\n</answer>\n<answer>\n19\n</answer>\n", "19"),
    ("<reasoning>\n<reasoning>\n</reasoning>\n<answer>\n3\n</answer>\n", "3"),
    ("The answer is 72.", "72"),
    ("<answer>\n72\n</answer>\ntrailing é ü text", "72"),
    ("", "0"),
]


def main():
    out = []
    for text, answer in CASES:
        scores = {f.__name__: f(completions=[text], answer=[answer])[0] for f in REWARDS}
        out.append({"completion": text, "answer": answer, "rewards": scores})
    print(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
