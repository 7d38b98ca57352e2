"""The command-line arguments gsm8k.py and poker.py share."""

import argparse
import os


def parser(doc, config, rows_from):
    """An ArgumentParser with the arguments both trainers' scripts take.

    doc is the script's docstring (its first line describes the command),
    config the default YAML file beside this one, rows_from the example
    whose -rows output --rows reads.
    """
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--model", required=True, help="Hugging Face folder (grpokit import's output)")
    ap.add_argument("--rows", required=True, help=f"JSONL from `{rows_from} -rows FILE`")
    ap.add_argument("--out", required=True)
    ap.add_argument("--config", default=os.path.join(os.path.dirname(__file__), config))
    ap.add_argument("--stop-after", type=int, default=0, help="stop after this many steps (the schedule stays max_steps')")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    return ap
