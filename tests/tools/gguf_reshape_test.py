#!/usr/bin/env python3
"""fluoro_gguf_reshape on both default models, as scripts/gpu-bundle.sh uses it: a slice (first
layers, truncated vocabulary) loads and generates, and the slice inflated back to the real layer
count and vocabulary has the real model's tensor names and shapes, the same number of tensors and
bytes of each type and the same tensor bytes (a mixed quantization like Q4_K_M may place its types
on other layers, since layers repeat cyclically), so GPU speed measured on it is the real model's.

usage: gguf_reshape_test.py RESHAPE_BIN FLUORO_BIN MODELS_DIR
Exit 77 (skip) when a model is missing, unless FLUORO_REQUIRE_MODELS=1.
"""
import json
import os
import subprocess
import sys
import tempfile

MODELS = [  # file, slice layers, slice vocabulary
    ("SmolLM2-135M-Instruct.Q4_1.gguf", 4, 16384),
    ("gemma-3-270m-q4_k_m.gguf", 6, 4096),
]


def info(fluoro, path):
    out = subprocess.run([fluoro, "info", path, "--json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    reshape, fluoro, models_dir = sys.argv[1:4]
    missing = [m for m, _, _ in MODELS if not os.path.exists(os.path.join(models_dir, m))]
    if missing:
        if os.environ.get("FLUORO_REQUIRE_MODELS") == "1":
            print(f"FAIL: missing {missing} (FLUORO_REQUIRE_MODELS=1)", file=sys.stderr)
            return 1
        print(f"SKIP: missing {missing}")
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, layers, vocab in MODELS:
            src = os.path.join(models_dir, name)
            sliced = os.path.join(tmp, "slice-" + name)
            full = os.path.join(tmp, "full-" + name)
            real = info(fluoro, src)
            subprocess.run([reshape, src, sliced, "--layers", str(layers), "--vocab", str(vocab)],
                           check=True, capture_output=True)
            s = info(fluoro, sliced)
            if s["hparams"]["block_count"] != layers:
                failures.append(f"{name}: slice has {s['hparams']['block_count']} layers")
            if s["hparams"]["vocab_size"] != vocab:
                failures.append(f"{name}: slice vocabulary {s['hparams']['vocab_size']}")
            run = subprocess.run([fluoro, "run", sliced, "Hello", "-n", "4", "--temp", "0", "-t", "2"],
                                 capture_output=True, text=True,
                                 env=dict(os.environ, FLUORO_DATA_DIR=tmp))
            if run.returncode != 0 or "decode 4 tok" not in run.stdout + run.stderr:
                failures.append(f"{name}: the slice does not generate: {run.stdout}{run.stderr}")
            subprocess.run([reshape, sliced, full, "--layers", str(real["hparams"]["block_count"]),
                            "--vocab", str(real["hparams"]["vocab_size"])],
                           check=True, capture_output=True)
            f = info(fluoro, full)
            shapes = lambda j: sorted((t["name"], tuple(t["shape"])) for t in j["tensors"])
            if shapes(f) != shapes(real):
                diff = sorted(set(shapes(f)) ^ set(shapes(real)))[:5]
                failures.append(f"{name}: inflated tensors differ from the real model's: {diff}")
            if f["type_mix"] != real["type_mix"]:
                failures.append(f"{name}: type mix {f['type_mix']} != {real['type_mix']}")
            if f["tensor_bytes"] != real["tensor_bytes"]:
                failures.append(f"{name}: {f['tensor_bytes']} tensor bytes, the real model "
                                f"{real['tensor_bytes']}")
            print(f"{name}: slice {layers} layers / {vocab} tokens generates; inflated: names, "
                  f"shapes, type mix and {f['tensor_bytes']} tensor bytes as the real model")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
