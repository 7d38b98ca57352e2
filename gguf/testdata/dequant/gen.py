#!/usr/bin/env python3
"""Regenerates golden.json, the reference for gguf's TestDequantizeMatchesGGUFPackage.

Pinned: gguf==0.19.0 (the PyPI package, gguf-py of llama.cpp) and
numpy==2.4.6; the script refuses other versions. Run from the repository
root:

    /work/venv/bin/python gguf/testdata/dequant/gen.py [--ggml PATH/libggml-base.so]

For every type it makes blocks from fixed-seed random bytes (any bytes
are a valid block of these types, except that the fp16 scale fields are
set to finite values) plus edge cases: zero and negative-zero scales,
negative scales, subnormal fp16 scales, the largest fp16 scale with all
quant bits set, all quant bits clear. The expected values are
gguf.quants.dequantize's float32 results, stored as their bits.

With --ggml (the libggml-base.so of a llama.cpp build, e.g. the one in
node-llama-cpp under gguf/testdata/llamacpp/node_modules), it also runs
ggml's own C dequantize_row_* on the same bytes and checks that every
bit agrees; the check's outcome is recorded in the file.
"""

import argparse
import ctypes
import json
import os
import sys

import numpy as np
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T
from gguf.quants import dequantize

GGUF_VERSION = "0.19.0"
NUMPY_VERSION = "2.4.6"
SEED = 20261201

# Byte offsets of each block's fp16 scale fields (ggml-common.h block_*).
FP16_FIELDS = {
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
}


def version(name):
    from importlib.metadata import version as v
    return v(name)


def random_finite_fp16(rng, n, sign=None):
    h = rng.integers(0, 1 << 16, size=n, dtype=np.uint32).astype(np.uint16)
    h = np.where((h & 0x7C00) == 0x7C00, h & 0xBFFF, h)  # exponent 31 -> 15
    if sign is not None:
        h = (h & 0x7FFF) | (0x8000 if sign else 0)
    return h.astype(np.uint16)


def quant_blocks(name, rng):
    """Blocks of one quantized type: (case name, block bytes) pairs."""
    _, size = GGML_QUANT_SIZES[T[name]]
    fields = FP16_FIELDS[name]
    out = []

    def block(case, quants, scales):
        b = bytearray(quants)
        for off, h in zip(fields, scales):
            b[off:off + 2] = int(h).to_bytes(2, "little")
        out.append((case, bytes(b)))

    def rnd():
        return rng.integers(0, 256, size=size, dtype=np.uint8).tobytes()

    k = len(fields)
    for i in range(4):
        block(f"random {i}", rnd(), random_finite_fp16(rng, k))
    block("zero scales", rnd(), [0x0000] * k)
    block("negative-zero scales", rnd(), [0x8000] * k)
    block("negative scales", rnd(), random_finite_fp16(rng, k, sign=True))
    block("subnormal scales", rnd(), [0x0001, 0x83FF][:k] if k == 2 else [0x0001])
    block("subnormal scales, random", rnd(), rng.integers(1, 0x400, size=k) | rng.choice([0, 0x8000], size=k))
    block("smallest normal scales", rnd(), [0x0400, 0x8400][:k])
    block("largest scales, all quant bits set", b"\xff" * size, [0x7BFF, 0xFBFF][:k])
    block("negative largest scales, all quant bits set", b"\xff" * size, [0xFBFF, 0x7BFF][:k])
    block("all quant bits clear", b"\x00" * size, random_finite_fp16(rng, k))
    block("scales 1.0, alternating bits", b"\xaa\x55" * (size // 2), [0x3C00] * k)
    return out


def plain_values(name, rng):
    """Values of F32, F16 or BF16 as (case, bytes) pairs, one value each."""
    if name == "F32":
        special = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001,
                            1, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0x3F800000], dtype=np.uint32)
        rand = rng.integers(0, 1 << 32, size=245, dtype=np.uint64).astype(np.uint32)
        vals, w = np.concatenate([special, rand]), 4
    elif name == "F16":
        # Signaling NaNs (exponent 31, quiet bit clear, payload nonzero) are
        # left out: numpy keeps them signaling, ggml sets the quiet bit.
        special = np.array([0, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0xFE01, 0x0001, 0x03FF,
                            0x8001, 0x0400, 0x7BFF, 0xFBFF, 0x3C00, 0x3555], dtype=np.uint32)
        rand = rng.integers(0, 1 << 16, size=1000, dtype=np.uint32)
        rand = rand[~(((rand & 0x7C00) == 0x7C00) & ((rand & 0x3FF) != 0) & ((rand & 0x200) == 0))][:242]
        vals, w = np.concatenate([special, rand]).astype(np.uint16), 2
    else:  # BF16
        special = np.array([0, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0x0001, 0x807F,
                            0x0080, 0x7F7F, 0x3F80], dtype=np.uint32)
        rand = rng.integers(0, 1 << 16, size=245, dtype=np.uint32)
        vals, w = np.concatenate([special, rand]).astype(np.uint16), 2
    return [("values", vals.tobytes())]


def reference(name, raw):
    t = T[name]
    arr = np.frombuffer(raw, dtype=np.uint8)
    if name not in ("F32", "F16"):
        bs, ts = GGML_QUANT_SIZES[t]
        arr = arr.reshape(-1, ts)
    out = dequantize(arr, t)
    return np.ascontiguousarray(out, dtype=np.float32).reshape(-1)


def ggml_check(lib, name, raw, want):
    """Runs ggml's C to_float on raw; returns the number of differing values."""
    t = T[name]
    bs, ts = GGML_QUANT_SIZES[t]
    n = len(raw) // ts * bs
    src = np.frombuffer(raw, dtype=np.uint8).copy()
    got = np.empty(n, dtype=np.float32)
    fn = {"F32": None, "F16": "ggml_fp16_to_fp32_row", "BF16": "ggml_bf16_to_fp32_row"}.get(
        name, "dequantize_row_" + name.lower().replace("_k", "_K"))
    if fn is None:
        got = src.view(np.float32).copy()
    else:
        f = getattr(lib, fn)
        f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        f.restype = None
        f(src.ctypes.data, got.ctypes.data, n)
    return int((got.view(np.uint32) != want.view(np.uint32)).sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ggml", help="libggml-base.so to cross-check against")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden.json"))
    args = ap.parse_args()
    got = (version("gguf"), np.__version__)
    if got != (GGUF_VERSION, NUMPY_VERSION):
        sys.exit(f"gen.py: want gguf {GGUF_VERSION} and numpy {NUMPY_VERSION}, have gguf {got[0]} and numpy {got[1]}")
    lib = ctypes.CDLL(args.ggml) if args.ggml else None

    rng = np.random.default_rng(SEED)
    types, ggml_notes = [], []
    for name in ["F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0",
                 "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]:
        blocks = plain_values(name, rng) if name in ("F32", "F16", "BF16") else quant_blocks(name, rng)
        raw = b"".join(b for _, b in blocks)
        want = reference(name, raw)
        if lib is not None:
            bad = ggml_check(lib, name, raw, want)
            ggml_notes.append(f"{name}: {bad} of {want.size} values differ")
            if bad:
                print(f"gen.py: {name}: ggml and gguf-py differ in {bad} of {want.size} values", file=sys.stderr)
        types.append({
            "type": name, "id": int(T[name]),
            "cases": [c for c, _ in blocks],
            "block_bytes": len(blocks[0][1]),
            "data": raw.hex(),
            "expected": want.astype("<f4").tobytes().hex(),
        })
        print(f"{name}: {len(blocks)} blocks, {want.size} values")

    if lib is not None:
        # Every fp16 value through both conversions.
        h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
        c = np.empty(1 << 16, dtype=np.float32)
        f = lib.ggml_fp16_to_fp32_row
        f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        f(h.ctypes.data, c.ctypes.data, 1 << 16)
        p = h.view(np.float16).astype(np.float32)
        diff = np.nonzero(c.view(np.uint32) != p.view(np.uint32))[0]
        snan = ((h & 0x7C00) == 0x7C00) & ((h & 0x3FF) != 0) & ((h & 0x200) == 0)
        only_snan = bool(np.all(snan[diff])) and int(snan.sum()) == len(diff)
        ggml_notes.append(f"all 65536 fp16 values: {len(diff)} differ"
                          + (" (exactly the signaling NaNs: ggml sets the quiet bit, numpy does not)" if only_snan else ""))
        where = os.path.relpath(args.ggml)
        pkg = os.path.join(os.path.dirname(os.path.abspath(args.ggml)), "..", "..", "package.json")
        if os.path.exists(pkg):  # node-llama-cpp's prebuilt binaries
            with open(pkg) as fh:
                p = json.load(fh)
            where += f" ({p.get('name')} {p.get('version')})"
        ggml_notes.insert(0, "ggml's C to_float in " + where)
        for n in ggml_notes:
            print("ggml check:", n)

    doc = {
        "generator": "gguf/testdata/dequant/gen.py",
        "reference": f"gguf {GGUF_VERSION} gguf.quants.dequantize, numpy {NUMPY_VERSION}",
        "seed": SEED,
        "ggml_check": ggml_notes or "not run (no --ggml)",
        "types": types,
    }
    with open(args.out, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
