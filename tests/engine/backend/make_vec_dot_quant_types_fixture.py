#!/usr/bin/env python3
"""Writes tests/engine/backend/fixtures/vec_dot_ggml_quant_types.json: ggml-cpu's own dot products
for the weight types added after vec_dot_ggml.json was made (MXFP4, IQ4_XS, the IQ2/IQ3 family).

Same method and libraries as make_vec_dot_fixture.py (imported from it: the llama-cpp-python
wheel's libggml-cpu, ggml's reference quantizers for the activations): seeded random weight rows,
what ggml's scalar `ggml_vec_dot_*_generic` and its SIMD kernel return for them. Each type draws
from its own random stream (seeded by the type name), so adding a type leaves the others' cases
unchanged. Weight rows are random bytes with a sane scale: every grid index, sign pattern and
sub-block scale is exercised.

Usage: python3 tests/engine/backend/make_vec_dot_quant_types_fixture.py
"""

import importlib.metadata
import json
import platform
import zlib
from pathlib import Path

import numpy as np

import make_vec_dot_fixture as base

OUT = Path(__file__).resolve().parent / "fixtures" / "vec_dot_ggml_quant_types.json"
SEED = 20261205

# name: (block elems, block bytes, partner, (offset, kind) scale fields, scale range)
#   kind "f16": an fp16 scale drawn in [0.1, 1] * range; "e8m0": an exponent byte, 2^-8 .. 2^-4;
#   "iq1m": IQ1_M's fp16 d, spread over the top nibbles of its four uint16 scales.
TYPES = {
    "mxfp4": (32, 17, "q8_0", [(0, "e8m0")], None),
    "iq4_xs": (256, 136, "q8_K", [(0, "f16")], 0.0005),
    "iq2_xxs": (256, 66, "q8_K", [(0, "f16")], 0.01),
    "iq2_xs": (256, 74, "q8_K", [(0, "f16")], 0.01),
    "iq2_s": (256, 82, "q8_K", [(0, "f16")], 0.01),
    "iq3_xxs": (256, 98, "q8_K", [(0, "f16")], 0.003),
    "iq3_s": (256, 110, "q8_K", [(0, "f16")], 0.003),
    "iq1_s": (256, 50, "q8_K", [(0, "f16")], 0.05),
    "iq1_m": (256, 56, "q8_K", [(48, "iq1m")], 0.05),
}


def random_weights(rng, name: str, n: int) -> bytes:
    blk, size, _, fields, scale = TYPES[name]
    raw = bytearray(rng.integers(0, 256, n // blk * size, dtype=np.uint8).tobytes())
    for b in range(n // blk):
        for off, kind in fields:
            if kind == "e8m0":
                raw[b * size + off] = int(rng.integers(127 - 8, 127 - 4 + 1))
            elif kind == "iq1m":  # fp16 d in the top nibbles of the 4 uint16 scales
                h = int(np.float16(rng.uniform(0.1, 1.0) * scale).view(np.uint16))
                for k in range(4):
                    i = b * size + off + 2 * k + 1
                    raw[i] = (raw[i] & 0x0F) | (((h >> (4 * k)) & 15) << 4)
            else:
                h = np.float16(rng.uniform(0.1, 1.0) * scale).tobytes()
                raw[b * size + off:b * size + off + 2] = h
    return bytes(raw)


def f32_hex(v: float) -> str:
    return np.float32(v).tobytes().hex()


def main() -> None:
    cases = []
    for name, (blk, _, partner, _, _) in TYPES.items():
        rng = np.random.default_rng([SEED, zlib.crc32(name.encode())])
        widths = [256, 2048] if blk == 256 else [64, 576, 2048]
        for n in widths:
            for act_scale in (0.5, 3.0):
                w = random_weights(rng, name, n)
                x = (rng.standard_normal(n) * act_scale).astype(np.float32)
                xq = base.to_partner(partner, x)
                generic = f"ggml_vec_dot_{name}_{partner}_generic"
                simd = f"ggml_vec_dot_{name}_{partner}"
                cases.append({
                    "type": name, "n": n, "w": w.hex(), "x_partner": xq.hex(),
                    "ggml_generic": f32_hex(base.vec_dot(generic, n, w, xq)),
                    "ggml_simd": f32_hex(base.vec_dot(simd, n, w, xq)),
                })
    doc = {
        "about": "ggml-cpu dot products on random rows; see make_vec_dot_quant_types_fixture.py",
        "generator": "tests/engine/backend/make_vec_dot_quant_types_fixture.py",
        "llama_cpp_python": importlib.metadata.version("llama_cpp_python"),
        "numpy": np.__version__,
        "machine": platform.machine(),
        "seed": SEED,
        "cases": cases,
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
