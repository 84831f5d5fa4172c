#!/usr/bin/env python3
"""Writes tests/engine/backend/fixtures/vec_dot_ggml.json: dot products computed by ggml itself.

For every weight type the CPU backend multiplies, seeded random weight rows and activation rows
(already converted to the partner format with ggml's reference quantizers) and what ggml-cpu's
dot kernels return for them: the scalar `ggml_vec_dot_*_generic` functions (which our kernels
copy operation for operation, so they must agree bit for bit) and the SIMD functions llama.cpp
actually runs on the machine that made the fixture (same products, other float summation order).

The ggml libraries come from the llama-cpp-python wheel (PyPI `llama_cpp_python`, which bundles
libggml-base.so and libggml-cpu.so); ggml is not code this project wrote. Needs numpy and
llama_cpp_python; the fixture records their versions.

Usage: python3 tests/engine/backend/make_vec_dot_fixture.py
"""

import ctypes
import importlib.metadata
import json
import platform
from pathlib import Path

import numpy as np
import llama_cpp

OUT = Path(__file__).resolve().parent / "fixtures" / "vec_dot_ggml.json"
SEED = 20250611
LIB_DIR = Path(llama_cpp.__file__).resolve().parent / "lib"

# name: (block elems, block bytes, fp16 field offsets, partner, ggml generic fn, ggml simd fn)
TYPES = {
    "f32": (1, 4, [], "f32", None, "ggml_vec_dot_f32"),
    "f16": (1, 2, [], "f16", None, "ggml_vec_dot_f16"),
    "bf16": (1, 2, [], "bf16", None, "ggml_vec_dot_bf16"),
    "q4_0": (32, 18, [0], "q8_0", "ggml_vec_dot_q4_0_q8_0_generic", "ggml_vec_dot_q4_0_q8_0"),
    "q4_1": (32, 20, [0, 2], "q8_1", "ggml_vec_dot_q4_1_q8_1_generic", "ggml_vec_dot_q4_1_q8_1"),
    # The wheel's q5_0 generic returns unrelated values (its SIMD kernel agrees with dequantize).
    "q5_0": (32, 22, [0], "q8_0", None, "ggml_vec_dot_q5_0_q8_0"),
    "q5_1": (32, 24, [0, 2], "q8_1", "ggml_vec_dot_q5_1_q8_1_generic", "ggml_vec_dot_q5_1_q8_1"),
    "q8_0": (32, 34, [0], "q8_0", "ggml_vec_dot_q8_0_q8_0_generic", "ggml_vec_dot_q8_0_q8_0"),
    "iq4_nl": (32, 18, [0], "q8_0", "ggml_vec_dot_iq4_nl_q8_0_generic",
               "ggml_vec_dot_iq4_nl_q8_0"),
    "q2_K": (256, 84, [80, 82], "q8_K", "ggml_vec_dot_q2_K_q8_K_generic", "ggml_vec_dot_q2_K_q8_K"),
    "q3_K": (256, 110, [108], "q8_K", "ggml_vec_dot_q3_K_q8_K_generic", "ggml_vec_dot_q3_K_q8_K"),
    "q4_K": (256, 144, [0, 2], "q8_K", "ggml_vec_dot_q4_K_q8_K_generic", "ggml_vec_dot_q4_K_q8_K"),
    "q5_K": (256, 176, [0, 2], "q8_K", "ggml_vec_dot_q5_K_q8_K_generic", "ggml_vec_dot_q5_K_q8_K"),
    "q6_K": (256, 210, [208], "q8_K", "ggml_vec_dot_q6_K_q8_K_generic", "ggml_vec_dot_q6_K_q8_K"),
}
# Scale ranges per type so dequantized weights are O(1).
SCALE = {"q4_0": 0.1, "q4_1": 0.1, "q5_0": 0.05, "q5_1": 0.05, "q8_0": 0.01, "iq4_nl": 0.01,
         "q2_K": 0.05, "q3_K": 0.02, "q4_K": 0.005, "q5_K": 0.003, "q6_K": 0.001}
PARTNER_BYTES = {"f32": (1, 4), "f16": (1, 2), "bf16": (1, 2), "q8_0": (32, 34), "q8_1": (32, 36),
                 "q8_K": (256, 292)}

base = ctypes.CDLL(str(LIB_DIR / "libggml-base.so"), mode=ctypes.RTLD_GLOBAL)
cpu = ctypes.CDLL(str(LIB_DIR / "libggml-cpu.so"))
cpu.ggml_cpu_init()  # fills the fp16 -> fp32 table the kernels read scales through
VEC_DOT_ARGS = [ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_size_t, ctypes.c_void_p,
                ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def to_partner(partner: str, x: np.ndarray) -> bytes:
    blk, size = PARTNER_BYTES[partner]
    out = ctypes.create_string_buffer(len(x) // blk * size)
    xp = x.ctypes.data_as(ctypes.c_void_p)
    n = ctypes.c_int64(len(x))
    if partner == "f32":
        return x.astype("<f4").tobytes()
    fn = {"f16": base.ggml_fp32_to_fp16_row, "bf16": base.ggml_fp32_to_bf16_row_ref,
          "q8_0": base.quantize_row_q8_0_ref, "q8_1": base.quantize_row_q8_1_ref,
          "q8_K": base.quantize_row_q8_K_ref}[partner]
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    fn(xp, out, n)
    return out.raw


def vec_dot(fn_name: str, n: int, w: bytes, x: bytes) -> float:
    fn = getattr(cpu, fn_name)
    fn.argtypes = VEC_DOT_ARGS
    fn.restype = None
    s = ctypes.c_float(0)
    wb = ctypes.create_string_buffer(w, len(w))
    xb = ctypes.create_string_buffer(x, len(x))
    fn(n, ctypes.byref(s), 0, ctypes.cast(wb, ctypes.c_void_p), 0,
       ctypes.cast(xb, ctypes.c_void_p), 0, 1)
    return s.value


def random_weights(rng, name: str, n: int) -> bytes:
    blk, size, halves, *_ = TYPES[name]
    if name == "f32":
        return rng.standard_normal(n).astype("<f4").tobytes()
    if name in ("f16", "bf16"):
        return to_partner(name, rng.standard_normal(n).astype(np.float32))
    raw = bytearray(rng.integers(0, 256, n // blk * size, dtype=np.uint8).tobytes())
    for b in range(n // blk):
        for off in halves:
            h = np.float16(rng.uniform(0.1, 1.0) * SCALE[name]).tobytes()
            raw[b * size + off:b * size + off + 2] = h
    return bytes(raw)


def f32_hex(v: float) -> str:
    return np.float32(v).tobytes().hex()


def main() -> None:
    rng = np.random.default_rng(SEED)
    cases = []
    for name, (blk, _, _, partner, generic, simd) in TYPES.items():
        widths = [256, 2048] if blk == 256 else [64, 576, 2048]
        for i, n in enumerate(widths):
            for scale in (0.5, 3.0)[i % 2:][:1] if blk != 256 else (0.5, 3.0):
                w = random_weights(rng, name, n)
                x = (rng.standard_normal(n) * scale).astype(np.float32)
                xq = to_partner(partner, x)
                cases.append({
                    "type": name, "n": n, "w": w.hex(), "x_partner": xq.hex(),
                    "ggml_generic": f32_hex(vec_dot(generic, n, w, xq)) if generic else None,
                    "ggml_simd": f32_hex(vec_dot(simd, n, w, xq)),
                })
    doc = {
        "about": "ggml-cpu dot products on random rows; see make_vec_dot_fixture.py",
        "generator": "tests/engine/backend/make_vec_dot_fixture.py",
        "llama_cpp_python": importlib.metadata.version("llama_cpp_python"),
        "numpy": np.__version__,
        "machine": platform.machine(),
        "seed": SEED,
        "cases": cases,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
