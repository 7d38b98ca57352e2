#!/usr/bin/env python3
"""Tiny sequence-classification reward models and their reference scores.

For each family grpokit supports (llama, qwen2, qwen3, gemma3_text) this
writes a Hugging Face folder <family>-seqcls/ (config.json with
architectures [...ForSequenceClassification], num_labels 1; model.safetensors
with the decoder under model.* and score.weight [1, hidden], F32, random
weights) and golden.json with token-id rows, texts and the scores
transformers' <Family>ForSequenceClassification gives them.

The forward is an independent float64 re-implementation written from
transformers' modeling code (models/llama, qwen2, qwen3, gemma3
modeling_*.py; eager attention; GenericForSequenceClassification /
LlamaForSequenceClassification.forward for the pooling): pure Python, no
torch or numpy. It reads the weights back from the written safetensors.

Pooling, as transformers does it: logits = score(hidden_states) at every
position; non_pad_mask = input_ids != pad_token_id; the pooled position is
argmax(arange(T) * non_pad_mask), the rightmost token that is not the pad
token (0 when every token is pad), over the right-padded row.

Texts follow TRL's GRPOTrainer for a reward model: a conversational sample
is messages + [{"role": "assistant", "content": completion}] rendered with
the reward tokenizer's chat template (no generation prompt); a standard one
is prompt + completion; both are tokenized with add_special_tokens=False
and right-padded with the tokenizer's pad token. The tokenizer the Go test
pairs with these models is tokenizer.WriteTinyDir with no words: byte b is
token b, <|endoftext|> (pad) 256, <|im_start|> 257, <|im_end|> 258, and a
ChatML template; this script tokenizes the same way.

Deterministic: a rerun rewrites byte-identical files.
Run: python3 make_golden.py   (in this directory)
"""

import json
import math
import os
import random
import struct

PAD, IM_START, IM_END = 256, 257, 258
VOCAB = 260


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


# ---------------------------------------------------------------- configs

def base_config(model_type, arch):
    return {
        "architectures": [arch],
        "model_type": model_type,
        "vocab_size": VOCAB,
        "hidden_size": 32,
        "intermediate_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 128,
        "bos_token_id": 257,
        "eos_token_id": 258,
        "pad_token_id": PAD,
        "id2label": {"0": "LABEL_0"},
        "label2id": {"LABEL_0": 0},
        "torch_dtype": "float32",
        "use_cache": False,
    }


CONFIGS = {
    "llama": dict(base_config("llama", "LlamaForSequenceClassification"),
                  rms_norm_eps=1e-5, rope_theta=10000.0, hidden_act="silu",
                  tie_word_embeddings=False, attention_bias=False, mlp_bias=False),
    "qwen2": dict(base_config("qwen2", "Qwen2ForSequenceClassification"),
                  rms_norm_eps=1e-6, rope_theta=1000000.0, hidden_act="silu",
                  tie_word_embeddings=False, use_sliding_window=False),
    "qwen3": dict(base_config("qwen3", "Qwen3ForSequenceClassification"),
                  rms_norm_eps=1e-6, rope_theta=1000000.0, hidden_act="silu",
                  head_dim=16, tie_word_embeddings=True, attention_bias=False,
                  use_sliding_window=False),
    "gemma3_text": dict(base_config("gemma3_text", "Gemma3TextForSequenceClassification"),
                        rms_norm_eps=1e-6, rope_theta=1000000.0, rope_local_base_freq=10000.0,
                        hidden_activation="gelu_pytorch_tanh", head_dim=8,
                        query_pre_attn_scalar=16, sliding_window=3,
                        layer_types=["sliding_attention", "full_attention"],
                        tie_word_embeddings=True, attn_logit_softcapping=None,
                        final_logit_softcapping=None, rope_scaling=None),
}


def head_dim(c):
    return c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]


# ---------------------------------------------------------------- weights

def make_weights(family, c, rng):
    """Random weights (name -> (shape, flat values exactly float32))."""
    h, inter, hd = c["hidden_size"], c["intermediate_size"], head_dim(c)
    nh, nkv = c["num_attention_heads"], c["num_key_value_heads"]
    w = {}

    def mat(name, rows, cols, scale=1.0):
        std = scale / math.sqrt(cols)
        w[name] = ([rows, cols], [f32(rng.gauss(0, std)) for _ in range(rows * cols)])

    def vec(name, n, mean, std):
        w[name] = ([n], [f32(rng.gauss(mean, std)) for _ in range(n)])

    gemma = family == "gemma3_text"
    w["model.embed_tokens.weight"] = ([VOCAB, h], [f32(rng.gauss(0, 1.0 if not gemma else 0.2)) for _ in range(VOCAB * h)])
    for i in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % i
        if gemma:
            vec(p + "input_layernorm.weight", h, 0, 0.2)
            vec(p + "post_attention_layernorm.weight", h, 0.5, 0.2)
            vec(p + "pre_feedforward_layernorm.weight", h, 0, 0.2)
            vec(p + "post_feedforward_layernorm.weight", h, 0.5, 0.2)
            vec(p + "self_attn.q_norm.weight", hd, 0.8, 0.3)
            vec(p + "self_attn.k_norm.weight", hd, 0.8, 0.3)
        else:
            vec(p + "input_layernorm.weight", h, 1, 0.2)
            vec(p + "post_attention_layernorm.weight", h, 1, 0.2)
        if family == "qwen3":
            vec(p + "self_attn.q_norm.weight", hd, 1, 0.3)
            vec(p + "self_attn.k_norm.weight", hd, 1, 0.3)
        mat(p + "self_attn.q_proj.weight", nh * hd, h, 2.0)
        mat(p + "self_attn.k_proj.weight", nkv * hd, h, 2.0)
        mat(p + "self_attn.v_proj.weight", nkv * hd, h)
        mat(p + "self_attn.o_proj.weight", h, nh * hd)
        if family == "qwen2":
            vec(p + "self_attn.q_proj.bias", nh * hd, 0, 0.5)
            vec(p + "self_attn.k_proj.bias", nkv * hd, 0, 0.5)
            vec(p + "self_attn.v_proj.bias", nkv * hd, 0, 0.5)
        mat(p + "mlp.gate_proj.weight", inter, h)
        mat(p + "mlp.up_proj.weight", inter, h)
        mat(p + "mlp.down_proj.weight", h, inter)
    vec("model.norm.weight", h, 1 if not gemma else 0, 0.2)
    mat("score.weight", 1, h, 2.0)
    return w


def write_safetensors(path, tensors):
    names = sorted(tensors)
    header, data, off = {}, bytearray(), 0
    for n in names:
        shape, vals = tensors[n]
        raw = struct.pack("<%df" % len(vals), *vals)
        header[n] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(raw)]}
        data += raw
        off += len(raw)
    header["__metadata__"] = {"format": "pt"}
    hb = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    hb += b" " * ((8 - len(hb) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        f.write(data)


def read_safetensors(path):
    """name -> (shape, list of float64), read back from the file."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        body = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32"
        a, b = info["data_offsets"]
        vals = struct.unpack("<%df" % ((b - a) // 4), body[a:b])
        out[name] = (info["shape"], [float(v) for v in vals])
    return out


# ---------------------------------------------------------------- forward (float64)

def matvec(W, shape, x):
    """W [out, in] flat, x [in] -> [out]: x W^T, as nn.Linear."""
    rows, cols = shape
    return [sum(W[r * cols + k] * x[k] for k in range(cols)) for r in range(rows)]


def rmsnorm(x, w, eps, one_plus):
    ms = sum(v * v for v in x) / len(x)
    inv = 1.0 / math.sqrt(ms + eps)
    if one_plus:  # Gemma3RMSNorm: x * rsqrt(...) * (1 + w)
        return [v * inv * (1.0 + wi) for v, wi in zip(x, w)]
    return [wi * (v * inv) for v, wi in zip(x, w)]  # LlamaRMSNorm: w * x_hat


def rope(x, pos, theta):
    """rotate_half layout over one head x [hd]."""
    hd = len(x)
    half = hd // 2
    out = [0.0] * hd
    for j in range(half):
        inv = 1.0 / (theta ** (2.0 * j / hd))
        a = pos * inv
        c, s = math.cos(a), math.sin(a)
        out[j] = x[j] * c - x[j + half] * s
        out[j + half] = x[j + half] * c + x[j] * s
    return out


def silu(z):
    return z / (1.0 + math.exp(-z))


def gelu_tanh(z):
    return 0.5 * z * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z ** 3)))


def forward(family, c, W, ids):
    """Final-norm hidden states [T][H] of one unpadded row (positions 0..T-1).

    With right padding the real tokens never attend to the padding (causal
    mask), so each row's real positions are its unpadded forward.
    """
    gemma = family == "gemma3_text"
    h, hd = c["hidden_size"], head_dim(c)
    nh, nkv = c["num_attention_heads"], c["num_key_value_heads"]
    eps = c["rms_norm_eps"]
    T = len(ids)
    E_shape, E = W["model.embed_tokens.weight"]
    x = [[E[t * h + k] for k in range(h)] for t in ids]
    if gemma:
        scale = math.sqrt(h)
        x = [[v * scale for v in row] for row in x]

    def g(name):
        return W[name][1]

    def lin(name, v, bias=False):
        shape, vals = W[name + ".weight"]
        y = matvec(vals, shape, v)
        if bias:
            y = [a + b for a, b in zip(y, W[name + ".bias"][1])]
        return y

    for i in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % i
        sliding = gemma and c["layer_types"][i] == "sliding_attention"
        theta = c["rope_local_base_freq"] if sliding else c["rope_theta"]
        qkv_bias = family == "qwen2"
        hs = [rmsnorm(row, g(p + "input_layernorm.weight"), eps, gemma) for row in x]
        Q, K, V = [], [], []
        for t in range(T):
            q = lin(p + "self_attn.q_proj", hs[t], qkv_bias)
            k = lin(p + "self_attn.k_proj", hs[t], qkv_bias)
            v = lin(p + "self_attn.v_proj", hs[t], qkv_bias)
            qh = [q[n * hd:(n + 1) * hd] for n in range(nh)]
            kh = [k[n * hd:(n + 1) * hd] for n in range(nkv)]
            vh = [v[n * hd:(n + 1) * hd] for n in range(nkv)]
            if family in ("qwen3", "gemma3_text"):
                qh = [rmsnorm(a, g(p + "self_attn.q_norm.weight"), eps, gemma) for a in qh]
                kh = [rmsnorm(a, g(p + "self_attn.k_norm.weight"), eps, gemma) for a in kh]
            Q.append([rope(a, t, theta) for a in qh])
            K.append([rope(a, t, theta) for a in kh])
            V.append(vh)
        scaling = c["query_pre_attn_scalar"] ** -0.5 if gemma else hd ** -0.5
        group = nh // nkv
        attn = []
        for t in range(T):
            heads = []
            for n in range(nh):
                kvh = n // group  # repeat_kv: query head n uses kv head n // group
                keys = [s for s in range(t + 1) if not (sliding and s <= t - c["sliding_window"])]
                sc = [sum(a * b for a, b in zip(Q[t][n], K[s][kvh])) * scaling for s in keys]
                m = max(sc)
                e = [math.exp(v - m) for v in sc]
                z = sum(e)
                out = [0.0] * hd
                for pr, s in zip(e, keys):
                    for d in range(hd):
                        out[d] += pr / z * V[s][kvh][d]
                heads.extend(out)
            attn.append(lin(p + "self_attn.o_proj", heads))
        if gemma:
            attn = [rmsnorm(a, g(p + "post_attention_layernorm.weight"), eps, True) for a in attn]
            x = [[a + b for a, b in zip(r, a2)] for r, a2 in zip(x, attn)]
            hs = [rmsnorm(row, g(p + "pre_feedforward_layernorm.weight"), eps, True) for row in x]
        else:
            x = [[a + b for a, b in zip(r, a2)] for r, a2 in zip(x, attn)]
            hs = [rmsnorm(row, g(p + "post_attention_layernorm.weight"), eps, False) for row in x]
        act = gelu_tanh if gemma else silu
        mlp = []
        for row in hs:
            gt = lin(p + "mlp.gate_proj", row)
            up = lin(p + "mlp.up_proj", row)
            mlp.append(lin(p + "mlp.down_proj", [act(a) * b for a, b in zip(gt, up)]))
        if gemma:
            mlp = [rmsnorm(a, g(p + "post_feedforward_layernorm.weight"), eps, True) for a in mlp]
        x = [[a + b for a, b in zip(r, m2)] for r, m2 in zip(x, mlp)]
    return [rmsnorm(row, g("model.norm.weight"), eps, gemma) for row in x]


def pooled_index(padded, pad):
    """transformers: (arange(T) * (ids != pad)).argmax(-1); argmax of ties is the first."""
    vals = [t if tok != pad else 0 for t, tok in enumerate(padded)]
    best = 0
    for t, v in enumerate(vals):
        if v > vals[best]:
            best = t
    return best


def score_rows(family, c, W, rows, pad):
    T = max(len(r) for r in rows)
    sw = W["score.weight"][1]
    out = []
    for r in rows:
        padded = r + [pad] * (T - len(r))
        idx = pooled_index(padded, pad)
        assert idx < len(r), "a row whose pooled position is padding"
        hs = forward(family, c, W, r)
        out.append({"pooled_index": idx, "score": sum(a * b for a, b in zip(hs[idx], sw))})
    return out


# ---------------------------------------------------------------- texts (TRL's rule)

def tokenize(text):
    """The tiny byte-level tokenizer: specials, then one token per byte."""
    specials = {"<|endoftext|>": PAD, "<|im_start|>": IM_START, "<|im_end|>": IM_END}
    ids, i, b = [], 0, text.encode("utf-8")
    while i < len(b):
        for s, sid in specials.items():
            sb = s.encode()
            if b.startswith(sb, i):
                ids.append(sid)
                i += len(sb)
                break
        else:
            ids.append(b[i])
            i += 1
    return ids


def chatml(messages):
    return "".join("<|im_start|>" + m["role"] + "\n" + m["content"] + "<|im_end|>\n" for m in messages)


ID_ROWS = [
    [257, 72, 105, 33, 258],                  # plain
    [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120],  # longest (sliding window matters)
    [7],                                      # one token
    [5, 6, PAD, 8, 9, 258],                   # the pad id inside the text: still attended
    [11, 12, 13, 14, PAD, PAD],               # ends with pad ids: pooled before them
    [PAD, PAD],                               # only pad ids: pooled at 0
]

SAMPLES = [
    {"prompt": "What is 2+2?", "completion": " 4", "messages": None},
    {"prompt": "Say hi", "completion": "Hello there! <|im_end|>", "messages": None},
    {"prompt": "", "completion": "Paris.", "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Capital of France?"}]},
    {"prompt": "", "completion": "no", "messages": [{"role": "user", "content": "yes?"}]},
]


def sample_text(s):
    if s["messages"]:
        return chatml(s["messages"] + [{"role": "assistant", "content": s["completion"]}])
    return s["prompt"] + s["completion"]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    golden = {"generator": "make_golden.py", "pad_token_id": PAD, "id_rows": ID_ROWS,
              "samples": SAMPLES, "families": {}}
    for n, family in enumerate(["llama", "qwen2", "qwen3", "gemma3_text"]):
        c = CONFIGS[family]
        rng = random.Random(1000 + n)
        d = os.path.join(here, family + "-seqcls")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(c, f, indent=2, sort_keys=True)
            f.write("\n")
        write_safetensors(os.path.join(d, "model.safetensors"), make_weights(family, c, rng))
        W = read_safetensors(os.path.join(d, "model.safetensors"))
        texts = [sample_text(s) for s in SAMPLES]
        text_ids = [tokenize(t) for t in texts]
        golden["families"][family] = {
            "dir": family + "-seqcls",
            "id_rows": score_rows(family, c, W, ID_ROWS, PAD),
            "texts": texts,
            "text_ids": text_ids,
            "samples": score_rows(family, c, W, text_ids, PAD),
        }
    with open(os.path.join(here, "golden.json"), "w") as f:
        json.dump(golden, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
