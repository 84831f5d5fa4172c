#!/usr/bin/env python3
"""Writes the bit-exact reference fixtures for engine/tensor (dequantize_row, quantize_row).

The expected values come from the `gguf` Python package (gguf.quants, PyPI), an implementation
nobody on this project wrote. Needs python3 with numpy and gguf (`pip install gguf numpy`);
nothing is pinned, but every fixture records the versions that produced it.

Writes into tests/reference/fixtures/:
  dequant_random_blocks.json  seeded random blocks of every type gguf can dequantize, with the
                              expected float32 output (hex of the little-endian bytes)
  dequant_model_rows.json     per tensor type in each real model: 2 tensors, their first rows'
                              dequantized sha256 + first 8 values, and the file's type mix
  quantize_rows.json          float32 rows and the bytes gguf.quants.quantize gives for them

Usage: python3 tests/reference/make_dequant_fixtures.py [--models-dir DIR]
"""

import argparse
import collections
import hashlib
import importlib.metadata
import json
import platform
from pathlib import Path

import numpy as np

import gguf
from gguf import GGMLQuantizationType as T
from gguf import quants

ROOT = Path(__file__).resolve().parents[2]
OUT_DIR = ROOT / "tests" / "reference" / "fixtures"
SCRIPT = "tests/reference/make_dequant_fixtures.py"
SEED = 20240607
MODEL_FILES = ["SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"]

# Byte offsets of the fp16 fields in each block (ggml-common.h), kept finite and sane below.
HALF_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0], T.IQ4_NL: [0],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}
BLOCK_TYPES = list(HALF_FIELDS)
QUANTIZE_TYPES = [T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0]


def header(what: str) -> dict:
    return {
        "generator": SCRIPT,
        "what": what,
        "gguf_version": importlib.metadata.version("gguf"),
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
        "seed": SEED,
    }


def type_name(t: T) -> str:
    return t.name.lower().replace("_k", "_K")  # as ggml prints it: q4_K, iq4_nl, bf16


def f32_hex(values: np.ndarray) -> str:
    return np.ascontiguousarray(values, dtype="<f4").tobytes().hex()


def dequantize_bytes(raw: bytes, t: T) -> np.ndarray:
    data = np.frombuffer(raw, dtype=np.uint8).reshape(1, -1)
    return quants.dequantize(data, t).reshape(-1).astype(np.float32)


def sane_halves(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random fp16 scales: sign random, magnitude 2^-14 .. 2^1."""
    mag = np.exp2(rng.uniform(-14, 1, n)) * rng.choice([-1.0, 1.0], n)
    return mag.astype(np.float16)


# Edge scales for the last block of each type: zero, negative zero, the smallest and largest
# subnormal, one, a negative normal.
EDGE_HALVES = np.array([0x0000, 0x8000, 0x0001, 0x03FF, 0x3C00, 0xC500], dtype=np.uint16)


def random_blocks(rng: np.random.Generator, t: T, n_blocks: int, edge: bool) -> bytes:
    block_size, type_size = gguf.GGML_QUANT_SIZES[t]
    blocks = rng.integers(0, 256, (n_blocks, type_size), dtype=np.uint8)
    for i in range(n_blocks):
        for k, off in enumerate(HALF_FIELDS[t]):
            if edge:
                h = EDGE_HALVES[(i * len(HALF_FIELDS[t]) + k) % len(EDGE_HALVES)]
            else:
                h = sane_halves(rng, 1).view(np.uint16)[0]
            blocks[i, off:off + 2] = np.array([h], dtype="<u2").view(np.uint8)
    return blocks.tobytes()


def plain_cases(rng: np.random.Generator) -> list:
    f16 = rng.integers(0, 1 << 16, 512, dtype=np.uint16)
    f16 = np.where((f16 & 0x7C00) == 0x7C00, f16 & 0x83FF, f16)  # no inf/NaN in the random part
    specials = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00]
    f16 = np.concatenate([f16, np.array(specials, dtype=np.uint16)])
    bf16 = rng.integers(0, 1 << 16, 512, dtype=np.uint16)  # every pattern, NaNs included
    f32 = rng.standard_normal(64).astype(np.float32) * np.float32(1e3)
    cases = []
    for t, raw in [(T.F16, f16.astype("<u2").tobytes()), (T.BF16, bf16.astype("<u2").tobytes()),
                   (T.F32, f32.astype("<f4").tobytes())]:
        out = dequantize_bytes(raw, t)
        cases.append({"type": type_name(t), "name": "random", "n": int(out.size),
                      "bytes": raw.hex(), "expected_f32": f32_hex(out)})
    return cases


def make_random_blocks() -> dict:
    rng = np.random.default_rng(SEED)
    cases = plain_cases(rng)
    for t in BLOCK_TYPES:
        block_size, _ = gguf.GGML_QUANT_SIZES[t]
        n_random = 4 if block_size == 32 else 2
        for name, n_blocks, edge in [("random", n_random, False), ("edge_scales", 3, True)]:
            raw = random_blocks(rng, t, n_blocks, edge)
            out = dequantize_bytes(raw, t)
            cases.append({"type": type_name(t), "name": name, "n": n_blocks * block_size,
                          "bytes": raw.hex(), "expected_f32": f32_hex(out)})
    doc = header("random blocks -> gguf.quants.dequantize, float32 output as little-endian hex")
    doc["cases"] = cases
    return doc


def make_model_rows(models_dir: Path) -> dict:
    doc = header("first rows of 2 tensors per type per model, dequantized by gguf.quants")
    doc["models"] = []
    for file in MODEL_FILES:
        reader = gguf.GGUFReader(models_dir / file)
        by_type = collections.defaultdict(list)
        for tensor in reader.tensors:
            by_type[tensor.tensor_type].append(tensor)
        entry = {"file": file,
                 "type_counts": {type_name(t): len(v) for t, v in sorted(by_type.items())},
                 "tensors": []}
        for t, tensors in sorted(by_type.items()):
            for tensor in tensors[:1] + tensors[1:][-1:]:  # the first and last of the type
                rows = np.asarray(tensor.data)
                rows = rows.reshape(-1, rows.shape[-1])[:2]
                values = quants.dequantize(rows, t).astype(np.float32)
                values = values.reshape(rows.shape[0], -1)
                entry["tensors"].append({
                    "name": tensor.name, "type": type_name(t),
                    "ne": [int(x) for x in tensor.shape],
                    "rows": [{"sha256": hashlib.sha256(values[r].astype("<f4").tobytes())
                              .hexdigest(),
                              "first8_f32": f32_hex(values[r][:8]),
                              "first8": [float(v) for v in values[r][:8]]}
                             for r in range(values.shape[0])],
                })
        doc["models"].append(entry)
    return doc


def tie_row(rng: np.random.Generator, low_bits: int, tie: int) -> np.ndarray:
    """Floats whose dropped low bits are exactly a tie, or a tie plus/minus one ulp."""
    exps = rng.integers(103, 143, 96)  # 2^-24 .. 2^15: fp16 subnormals up to near overflow
    mant = rng.integers(0, 1 << 23, 96) & ~((1 << low_bits) - 1)
    bits = (exps << 23) | mant | (tie + rng.integers(-1, 2, 96))
    bits |= rng.integers(0, 2, 96) << 31
    bits = np.concatenate([bits, [0x477FEFFF, 0x477FF000, 0x477FF001, 0x33000000, 0x33000001]])
    return bits.astype(np.uint32).view(np.float32)


def quantize_rows(rng: np.random.Generator) -> list:
    zeros_const = np.concatenate([np.zeros(32), np.full(32, 0.5)])
    ties_q8 = np.concatenate([[127.0, -127.0], np.arange(-15, 15) + 0.5,
                              [-8.0], np.arange(-15, 16) * 0.5])
    equal_magnitudes = np.concatenate([[2.0, -2.0], rng.uniform(-2, 2, 30),
                                       [-3.0, 3.0], rng.uniform(-3, 3, 30)])
    return [
        ("normal", rng.standard_normal(128)),
        ("asymmetric_uniform", rng.uniform(-3.0, 7.0, 128)),
        ("small_normal", rng.standard_normal(64) * 1e-3),
        ("zeros_then_constant", zeros_const),
        ("equal_magnitudes", equal_magnitudes),
        ("rounding_ties", ties_q8),
        ("huge", rng.standard_normal(64) * 2e4),
        ("tiny", rng.standard_normal(64) * 1e-7),
        ("negative_only", -np.abs(rng.standard_normal(64)) - 1.0),
        ("fp16_ties", tie_row(rng, 13, 0x1000)),
        ("bf16_ties", tie_row(rng, 16, 0x8000)),
    ]


def make_quantize_rows() -> dict:
    rng = np.random.default_rng(SEED + 1)
    cases = []
    for name, row in quantize_rows(rng):
        row = np.asarray(row, dtype=np.float32)
        expected = {}
        for t in QUANTIZE_TYPES:
            block_size, _ = gguf.GGML_QUANT_SIZES[t]
            if row.size % block_size != 0:
                continue
            with np.errstate(over="ignore"):
                q = quants.quantize(row.reshape(1, -1), t)
            expected[type_name(t)] = np.ascontiguousarray(q).view(np.uint8).tobytes().hex()
        cases.append({"name": name, "n": int(row.size), "input_f32": f32_hex(row),
                      "expected": expected})
    doc = header("float32 rows -> gguf.quants.quantize bytes (hex)")
    doc["cases"] = cases
    return doc


def write(name: str, doc: dict) -> None:
    path = OUT_DIR / name
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size // 1024} KiB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-dir", type=Path, default=ROOT / "models")
    args = parser.parse_args()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    write("dequant_random_blocks.json", make_random_blocks())
    write("quantize_rows.json", make_quantize_rows())
    write("dequant_model_rows.json", make_model_rows(args.models_dir))


if __name__ == "__main__":
    main()
