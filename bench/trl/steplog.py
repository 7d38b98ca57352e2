"""The step logger both TRL scripts share: metrics.jsonl, one line per step."""

import json
import time

from transformers import TrainerCallback


class Log(TrainerCallback):
    """Writes each logged step to metrics.jsonl with its wall time, and stops after stop_after steps."""

    def __init__(self, path, stop_after):
        self.path, self.stop_after, self.t = path, stop_after, None

    def on_step_begin(self, args, state, control, **kw):
        self.t = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        self.last = time.perf_counter() - self.t
        if self.stop_after and state.global_step >= self.stop_after:
            control.should_training_stop = True
            control.should_save = True

    def on_log(self, args, state, control, logs=None, **kw):
        if logs and "loss" in logs:
            rec = {"step": state.global_step, "wall_step_seconds": getattr(self, "last", None), **logs}
            with open(self.path, "a") as f:
                f.write(json.dumps(rec) + "\n")
