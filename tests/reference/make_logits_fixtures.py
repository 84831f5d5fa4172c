#!/usr/bin/env python3
"""Writes fixtures/logits_<model>.json: final-position logits of fixed prompts from the
independent float64 reference forward pass (reference_forward.py: numpy + the gguf package's
dequantizer), for the engine's logits tests (tests/engine/model/logits_reference_test.cpp).

The prompts were fixed before any comparison was run. Token ids come from the independent
reference tokenizers of make_tokenizer_fixtures.py (so this fixture does not depend on our
tokenizer either); Gemma 3 prompts start with BOS (its add_bos is true), SmolLM2's do not.
Stored per prompt: the ids, the top-64 logits, every STRIDE-th logit of the vocabulary, and the
log-sum-exp (so log-probabilities can be checked). Usage:
    python3 tests/reference/make_logits_fixtures.py [models_dir]
"""
from __future__ import annotations

import importlib.metadata
import json
import platform
import sys
from pathlib import Path

import numpy as np
import gguf

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_tokenizer_fixtures as tokfix  # noqa: E402
import reference_forward as rf  # noqa: E402

KJV = (HERE / "data" / "kjv_genesis.txt").read_text(encoding="utf-8")

PROMPTS = [
    ("capital", "The capital of France is"),
    ("code", 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n'),
    ("story", "Once upon a time, in a small village by the sea, there lived"),
    ("history", "In 1969, the Apollo 11 mission"),
    ("chat", None),  # the model's own chat format, filled in per model below
    ("long", KJV[:3000]),  # ~700 tokens: past Gemma 3's 512-token sliding window
]

CHAT = {
    "smollm2": "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
               "Face<|im_end|>\n<|im_start|>user\nWhat is 17 times 23?<|im_end|>\n"
               "<|im_start|>assistant\n",
    "gemma3": "<start_of_turn>user\nWhat is 17 times 23?<end_of_turn>\n<start_of_turn>model\n",
}

MODELS = [
    ("smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", tokfix.build_smollm2_reference, None, 16),
    ("gemma3", "gemma-3-270m-q4_k_m.gguf", tokfix.build_gemma3_reference, 2, 64),
]


def make(models_dir: Path, key, file, builder, bos, stride):
    path = models_dir / file
    encode, _, tok_info = builder(tokfix.GgufTokenizerData(path))
    model = rf.GgufModel(str(path))
    entries = []
    for name, text in PROMPTS:
        text = CHAT[key] if text is None else text
        ids = ([bos] if bos is not None else []) + list(encode(text, True))
        logits = rf.forward(model, ids, last_only=True)[-1]
        top = np.argsort(-logits, kind="stable")[:64]
        m = logits.max()
        lse = float(m + np.log(np.exp(logits - m).sum()))
        entries.append({
            "name": name, "ids": [int(i) for i in ids],
            "top_ids": [int(i) for i in top], "top_logits": [round(float(logits[i]), 6) for i in top],
            "strided": [round(float(x), 6) for x in logits[::stride]],
            "logsumexp": round(lse, 6),
        })
        print(f"{key}/{name}: {len(ids)} tokens, top {int(top[0])} {float(logits[top[0]]):.4f}")
    fixture = {
        "about": "Final-position logits from the float64 reference forward pass; regenerate with "
                 "the generator script.",
        "generator": "tests/reference/make_logits_fixtures.py",
        "reference": {"forward": "tests/reference/reference_forward.py (numpy float64)",
                      "gguf": importlib.metadata.version("gguf"),
                      "numpy": np.__version__, "python": platform.python_version(),
                      "tokenizer": tok_info},
        "model_file": file, "model_sha256": tokfix.sha256_of(path),
        "n_vocab": int(len(logits)), "stride": stride, "entries": entries,
    }
    out = HERE / "fixtures" / f"logits_{key}.json"
    out.write_text(json.dumps(fixture, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {out} ({out.stat().st_size} bytes)")


def main():
    models_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parent.parent / "models"
    for spec in MODELS:
        make(models_dir, *spec)


if __name__ == "__main__":
    main()
