#!/usr/bin/env python3
"""Writes tests/reference/fixtures/dequant_quant_types.json: bit-exact dequantization references
for the quant types added in issue 32 part 2 (MXFP4, IQ4_XS, the IQ2/IQ3 family).

The expected values come from the `gguf` Python package (gguf.quants, numpy dequantizers written
from ggml's reference code), an implementation nobody on this project wrote. Same method as
make_dequant_fixtures.py, kept separate so that file's fixtures stay untouched: seeded random
blocks with sane scales, plus an edge block per type. Each type draws from its own random stream
(seeded by the type name), so adding a type leaves the others' cases unchanged.

Needs python3 with numpy and gguf; the fixture records their versions.
Usage: python3 tests/reference/make_quant_types_fixtures.py
"""

import importlib.metadata
import json
import platform
import zlib
from pathlib import Path

import numpy as np

import gguf
from gguf import GGMLQuantizationType as T
from gguf import quants

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "reference" / "fixtures" / "dequant_quant_types.json"
SCRIPT = "tests/reference/make_quant_types_fixtures.py"
SEED = 20261205

# Scale fields per type (byte offset, kind): "f16" a half-precision d, "e8m0" an exponent byte,
# "iq1m" IQ1_M's fp16 d spread over the top nibbles of its four uint16 scales.
FIELDS = {
    T.MXFP4: [(0, "e8m0")],
    T.IQ4_XS: [(0, "f16")],
    T.IQ2_XXS: [(0, "f16")],
    T.IQ2_XS: [(0, "f16")],
    T.IQ2_S: [(0, "f16")],
    T.IQ3_XXS: [(0, "f16")],
    T.IQ3_S: [(0, "f16")],
    T.IQ1_S: [(0, "f16")],
    T.IQ1_M: [(48, "iq1m")],
}
# Edge scales for the last block(s): e8m0 extremes (0 and 1 are float32 subnormals, 255 is 2^128
# in ggml); fp16 zero, negative zero, smallest and largest subnormal, one, a negative normal.
EDGE = {
    "e8m0": [0, 1, 2, 127, 254, 255],
    "f16": [0x0000, 0x8000, 0x0001, 0x03FF, 0x3C00, 0xC500],
}
EDGE["iq1m"] = EDGE["f16"]


def type_name(t: T) -> str:
    return t.name.lower()


def f32_hex(values: np.ndarray) -> str:
    return np.ascontiguousarray(values, dtype="<f4").tobytes().hex()


def set_field(block: np.ndarray, off: int, kind: str, value: int) -> None:
    if kind == "e8m0":
        block[off] = value
    elif kind == "iq1m":  # fp16 d spread over the top nibbles of the 4 uint16 scales
        for k in range(4):
            byte = off + 2 * k + 1
            block[byte] = (block[byte] & 0x0F) | (((value >> (4 * k)) & 15) << 4)
    else:
        block[off:off + 2] = np.array([value], dtype="<u2").view(np.uint8)


def random_blocks(rng, t: T, n_blocks: int, edge: bool) -> bytes:
    _, type_size = gguf.GGML_QUANT_SIZES[t]
    blocks = rng.integers(0, 256, (n_blocks, type_size), dtype=np.uint8)
    for i in range(n_blocks):
        for k, (off, kind) in enumerate(FIELDS[t]):
            if edge:
                value = EDGE[kind][(i * len(FIELDS[t]) + k) % len(EDGE[kind])]
            elif kind == "e8m0":
                value = int(rng.integers(127 - 10, 127 + 3))
            else:
                mag = np.exp2(rng.uniform(-14, 1)) * rng.choice([-1.0, 1.0])
                value = int(np.float16(mag).view(np.uint16))
            set_field(blocks[i], off, kind, value)
    return blocks.tobytes()


def main() -> None:
    cases = []
    for t in FIELDS:
        rng = np.random.default_rng([SEED, zlib.crc32(type_name(t).encode())])
        block_size, _ = gguf.GGML_QUANT_SIZES[t]
        n_random = 4 if block_size == 32 else 2
        for name, n_blocks, edge in [("random", n_random, False), ("edge_scales", 6, True)]:
            raw = random_blocks(rng, t, n_blocks, edge)
            data = np.frombuffer(raw, dtype=np.uint8).reshape(1, -1)
            with np.errstate(over="ignore", invalid="ignore"):
                out = quants.dequantize(data, t).reshape(-1).astype(np.float32)
            cases.append({"type": type_name(t), "name": name, "n": n_blocks * block_size,
                          "bytes": raw.hex(), "expected_f32": f32_hex(out)})
    doc = {
        "generator": SCRIPT,
        "what": "random blocks -> gguf.quants.dequantize, float32 output as little-endian hex",
        "gguf_version": importlib.metadata.version("gguf"),
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
        "seed": SEED,
        "cases": cases,
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {len(cases)} cases to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
