#!/usr/bin/env python3
"""Writes tiny llama GGUFs whose matrices are in the IQ quant types (fixtures/quant_<type>.gguf),
and one with MXFP4 feed-forward matrices as gpt-oss stores its experts, and llama.cpp's logits (fixtures/quant_<type>.json), for
tests/engine/model/quant_types_llamacpp_test.cpp.

gguf-py cannot quantize the IQ types, so each model is written in F16 by make_arch_fixtures.py's
write_model (its vocabulary and llama recipe, here with n_embd 256 and n_ff 512 so that every
matrix row is a whole number of 256-element super-blocks) and then quantized by llama.cpp itself
(llama-cpp-python's llama_model_quantize, `pure`: every matrix, token embeddings and output
included, in the one type). IQ4_XS and IQ3_S need no importance matrix; IQ2_XXS/IQ2_XS/IQ2_S do,
so they are covered by the kernel fixtures only. The MXFP4 model is written by gguf-py directly
(it quantizes MXFP4) with make_arch_fixtures.py's small llama shape, F16 attention. llama.cpp then evaluates make_arch_fixtures.py's
fixed 200-token sequence (its run_llama_cpp) and the JSON stores, as arch_<name>.json does, the
ids, llama.cpp's argmax and top-2 gap at every position and full logit rows every STRIDE-th
position, plus the float64 reference forward pass (reference_forward.py: gguf-py dequantizes the
same IQ bytes) as a second witness.

Usage: pip install gguf llama-cpp-python && python3 tests/reference/make_quant_model_fixtures.py
"""
from __future__ import annotations

import ctypes
import importlib.metadata
import json
import platform
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_arch_fixtures as maf  # noqa: E402
import reference_forward as rf  # noqa: E402

# type -> llama.cpp ftype to quantize the F16 file to, or None: written directly by gguf-py.
MODELS = {"iq4_xs": "LLAMA_FTYPE_MOSTLY_IQ4_XS", "iq3_s": "LLAMA_FTYPE_MOSTLY_IQ3_S", "mxfp4": None}
CFG = dict(maf.BASE, arch="llama", n_layer=2, n_embd=256, n_head=4, n_head_kv=2, head_dim=64,
           n_ff=512, ctx=1024)
# MXFP4 as gpt-oss uses it: the feed-forward matrices only (gguf-py quantizes MXFP4 itself),
# attention and embeddings F16, make_arch_fixtures.py's small llama shape.
CFG_MXFP4 = dict(maf.BASE, arch="llama", ffn_type="MXFP4")


def quantize(src: Path, dst: Path, ftype_name: str) -> None:
    import llama_cpp
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, ftype_name)
    params.pure = True
    params.nthread = 2
    rc = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(),
                                        ctypes.byref(params))
    if rc != 0:
        raise SystemExit(f"llama_model_quantize({ftype_name}) failed: {rc}")


def make(name: str, ftype_name: str | None) -> None:
    gguf_path = maf.FIXTURES / f"quant_{name}.gguf"
    cfg = CFG if ftype_name else CFG_MXFP4
    if ftype_name is None:
        maf.write_model(f"quant-{name}", cfg, gguf_path)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            f16 = Path(tmp) / "f16.gguf"
            maf.write_model(f"quant-{name}", cfg, f16)
            quantize(f16, gguf_path, ftype_name)
    rng = np.random.default_rng([maf.SEED, 7])
    ids = [int(i) for i in rng.integers(3, 259, maf.N_TOKENS)]
    logits, _ = maf.run_llama_cpp(gguf_path, ids)
    ref = rf.forward(rf.GgufModel(str(gguf_path)), ids)
    order = np.argsort(-logits, axis=1, kind="stable")
    rows = sorted(set(range(0, maf.N_TOKENS, maf.STRIDE)) | {maf.N_TOKENS - 1})
    import gguf
    types = sorted({t.tensor_type.name for t in gguf.GGUFReader(gguf_path).tensors})
    out = {
        "generator": "tests/reference/make_quant_model_fixtures.py",
        "llama_cpp_python": importlib.metadata.version("llama-cpp-python"),
        "gguf": importlib.metadata.version("gguf"),
        "python": platform.python_version(),
        "settings": maf.SETTINGS,
        "model": gguf_path.name,
        "ftype": ftype_name,
        "tensor_types": types,
        "recipe": cfg,
        "seed": maf.SEED,
        "ids": ids,
        "argmax": [int(o[0]) for o in order],
        "top2_gap": [round(float(logits[i, order[i, 0]] - logits[i, order[i, 1]]), 6)
                     for i in range(maf.N_TOKENS)],
        "rows": rows,
        "logits": [[round(float(v), 6) for v in logits[r]] for r in rows],
        "reference_f64": [[round(float(v), 6) for v in ref[r]] for r in rows],
        "llama_cpp_vs_f64_max_abs": round(float(np.abs(logits[rows] - ref[rows]).max()), 6),
        "llama_cpp_vs_f64_argmax_agree": int((logits.argmax(1) == ref.argmax(1)).sum()),
    }
    (maf.FIXTURES / f"quant_{name}.json").write_text(json.dumps(out, indent=None) + "\n")
    rms = float(np.sqrt(np.mean(np.square(np.array(out["logits"])))))
    print(f"{name}: {gguf_path.stat().st_size} bytes, types {types}, RMS logit {rms:.3f}, "
          f"min top2 gap={min(out['top2_gap']):.5f}, llama.cpp vs f64: max |d| "
          f"{out['llama_cpp_vs_f64_max_abs']}, argmax agree "
          f"{out['llama_cpp_vs_f64_argmax_agree']}/{maf.N_TOKENS}")


if __name__ == "__main__":
    for n in sys.argv[1:] or MODELS:
        make(n, MODELS[n])
