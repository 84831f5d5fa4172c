#!/usr/bin/env python3
"""Writes fixtures/greedy_<model>.json: greedy continuations (64 tokens) of fixed prompts by
llama.cpp (through llama-cpp-python from PyPI, which builds llama.cpp from source) on the same
GGUF files, for tests/engine/model/greedy_llamacpp_test.cpp.

The prompts were fixed before any comparison was run and are never chosen by whether they pass.
Prompt ids come from the independent reference tokenizers (make_tokenizer_fixtures.py) and are
fed to llama.cpp as ids, so both engines see identical input. At every generated position the
fixture keeps llama.cpp's top-5 token ids and logits: where two correct engines part at a
near-tie, the test checks that the tie was real (both engines' picks within a margin in both).
Generation does not stop at end-of-generation tokens: always 64 tokens.
Usage: pip install llama-cpp-python && python3 tests/reference/make_greedy_fixtures.py [models_dir]
"""
from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import numpy as np
import llama_cpp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_tokenizer_fixtures as tokfix  # noqa: E402

N_GEN = 64
SETTINGS = {"n_ctx": 1024, "n_threads": 2, "n_batch": 512, "flash_attn": False,
            "type_k": "f16 (default)", "type_v": "f16 (default)"}

PROMPTS = [
    ("capital", "The capital of France is"),
    ("fibonacci", "def fibonacci(n):\n"),
    ("once", "Once upon a time,"),
    ("colors", "The three primary colors are"),
    ("water", "Water boils at"),
    ("numpy", "import numpy as np\n\n"),
    ("genesis", "In the beginning God created"),
    ("fox", "The quick brown fox"),
    ("count", "1, 2, 3, 4, 5,"),
    ("planet", "Q: What is the largest planet in our solar system?\nA:"),
    ("chat_mountain", ("chat", "What is the tallest mountain in the world?")),
    ("chat_haiku", ("chat", "Write a haiku about autumn.")),
]


def chat_text(key: str, user: str) -> str:
    if key == "smollm2":
        return ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
                f"Hugging Face<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n")
    return f"<start_of_turn>user\n{user}<end_of_turn>\n<start_of_turn>model\n"


MODELS = [
    ("smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", tokfix.build_smollm2_reference, None),
    ("gemma3", "gemma-3-270m-q4_k_m.gguf", tokfix.build_gemma3_reference, 2),
]


def make(models_dir: Path, key, file, builder, bos):
    path = models_dir / file
    encode, _, tok_info = builder(tokfix.GgufTokenizerData(path))
    llm = llama_cpp.Llama(str(path), n_ctx=SETTINGS["n_ctx"], n_threads=SETTINGS["n_threads"],
                          n_batch=SETTINGS["n_batch"], flash_attn=SETTINGS["flash_attn"],
                          logits_all=True, verbose=False)
    entries = []
    for name, prompt in PROMPTS:
        text = chat_text(key, prompt[1]) if isinstance(prompt, tuple) else prompt
        ids = ([bos] if bos is not None else []) + list(encode(text, True))
        llm.reset()
        llm.eval(ids)
        gen, top_ids, top_logits = [], [], []
        for _ in range(N_GEN):
            scores = np.asarray(llm.scores[llm.n_tokens - 1], dtype=np.float64)
            order = np.argsort(-scores, kind="stable")[:5]
            tok = int(order[0])
            gen.append(tok)
            top_ids.append([int(i) for i in order])
            top_logits.append([round(float(scores[i]), 5) for i in order])
            llm.eval([tok])
        entries.append({"name": name, "prompt_ids": ids, "generated": gen, "top_ids": top_ids,
                        "top_logits": top_logits})
        print(f"{key}/{name}: {llm.detokenize(gen)[:70]!r}")
    fixture = {
        "about": "Greedy continuations by llama.cpp on the same GGUF; regenerate with the script.",
        "generator": "tests/reference/make_greedy_fixtures.py",
        "reference": {"engine": "llama.cpp via llama-cpp-python", "version": llama_cpp.__version__,
                      "settings": SETTINGS, "python": platform.python_version(),
                      "numpy": np.__version__, "tokenizer": tok_info},
        "model_file": file, "model_sha256": tokfix.sha256_of(path), "n_gen": N_GEN,
        "entries": entries,
    }
    out = HERE / "fixtures" / f"greedy_{key}.json"
    out.write_text(json.dumps(fixture, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {out} ({out.stat().st_size} bytes)")


def main():
    models_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parent.parent / "models"
    for spec in MODELS:
        make(models_dir, *spec)


if __name__ == "__main__":
    main()
