#!/usr/bin/env python3
"""Writes fixtures/fidelity_<model>.json for `fluoro eval fidelity`: the token windows both
engines are measured on, and llama.cpp's distance from the exact forward pass on them.

The text is the first 4096 tokens of data/kjv_genesis.txt (the perplexity text), tokenized by
llama.cpp, cut into 8 windows of 512 tokens (the first of each replaced by BOS where the
vocabulary adds one, as llama.cpp's perplexity and KL-divergence tools do). At every scored
position (the second half of each window, as those tools score: 8 x 255 = 2040) the
reference is reference_forward.py in float64 with the weights dequantized by the `gguf` package,
and llama.cpp's next-token distribution (llama-cpp-python, pinned; logits of every position,
flash attention off) is compared with it the way `llama-perplexity --kl-divergence` does:
KL(P_reference || P_llama.cpp) per position - mean, 99th percentile (sorted value at
floor(0.99 (n - 1))), max - and the share of positions whose most likely token is the same;
the per-position values too (6 significant digits), for a paired comparison with fluoro's.
The C++ tool (engine/eval/fidelity.cpp) computes the same figures for fluoro the same way.

Usage: pip install gguf numpy llama-cpp-python==0.3.36
       python3 tests/reference/make_fidelity_fixtures.py [models_dir] [--flash-attn --print-only]
  --flash-attn   llama.cpp with flash attention on (the fixtures are made with it off)
  --print-only   print llama.cpp's figures, write no fixture
"""
from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import llama_cpp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fidelity_reference as fr  # noqa: E402
import reference_forward as rf  # noqa: E402

N_CTX, N_CHUNKS = 512, 8
MODELS = {"smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf", "gemma3": "gemma-3-270m-q4_k_m.gguf"}


def log_softmax(x: np.ndarray) -> np.ndarray:
    return x - fr.logsumexp(x)[..., None]


def distance(ref_logits: np.ndarray, logits: np.ndarray, targets: np.ndarray) -> dict:
    """Per-position KL(P_ref || P), same top token, and both NLLs of the actual next token."""
    lp, lq = log_softmax(ref_logits), log_softmax(logits.astype(np.float64))
    kld = (np.exp(lp) * (lp - lq)).sum(axis=-1)
    rows = np.arange(len(targets))
    return {"kld": kld, "same": ref_logits.argmax(-1) == logits.argmax(-1),
            "nll_ref": -lp[rows, targets], "nll": -lq[rows, targets]}


def summary(kld: np.ndarray, same: np.ndarray, nll: np.ndarray) -> dict:
    s = np.sort(kld)
    return {"kld_mean": float(kld.mean()), "kld_p99": float(s[int(0.99 * (len(s) - 1))]),
            "kld_max": float(s[-1]), "top1": float(same.mean()), "ppl": math.exp(nll.mean())}


def one_model(name: str, path: Path, text: str, flash: bool = False) -> dict:
    llm = llama_cpp.Llama(str(path), n_ctx=N_CTX, n_batch=N_CTX, n_threads=2, logits_all=True,
                          flash_attn=flash, verbose=False)
    ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)[:N_CTX * N_CHUNKS]
    assert len(ids) == N_CTX * N_CHUNKS, len(ids)
    m = fr.cached_model(path)
    add_bos = bool(m.field("tokenizer.ggml.add_bos_token", False))
    chunks = []
    for c in range(N_CHUNKS):
        w = list(ids[c * N_CTX:(c + 1) * N_CTX])
        if add_bos:
            w[0] = llm.token_bos()
        chunks.append([int(t) for t in w])
    first = N_CTX // 2
    parts = []
    start = time.time()
    for c, w in enumerate(chunks):
        ref = rf.lm_head(m, fr.scored_hidden(m, w))
        llm.reset()
        llm.eval(w)
        ours = np.asarray(llm.scores[first:N_CTX - 1], dtype=np.float64)
        parts.append(distance(ref, ours, np.asarray(w[first + 1:], dtype=np.int64)))
        print(f"{name} [{c + 1}/{N_CHUNKS}] kld {parts[-1]['kld'].mean():.6f} "
              f"({time.time() - start:.0f} s)", flush=True)
    cat = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    peer = summary(cat["kld"], cat["same"], cat["nll"])
    peer.update({"engine": "llama.cpp via llama-cpp-python", "version": llama_cpp.__version__,
                 "settings": f"n_ctx 512, n_batch 512, 2 threads, flash attention "
                             f"{'on' if flash else 'off'}, f16 KV",
                 # per position, for a paired comparison (tests/tools/fidelity_test.py)
                 "kld": [float(f"{k:.6g}") for k in cat["kld"]]})
    return {
        "about": "Token windows for `fluoro eval fidelity` and llama.cpp's distance from the "
                 "float64 reference on them; regenerate with the script.",
        "generator": "tests/reference/make_fidelity_fixtures.py",
        "model_file": path.name, "model_sha256": fr.sha256_of(path),
        "text": "tests/reference/data/kjv_genesis.txt (first 4096 tokens)",
        "n_ctx": N_CTX, "first_scored": first, "scored": int(len(cat["kld"])),
        "reference": {"ppl": math.exp(cat["nll_ref"].mean())},
        "llama.cpp": peer, "chunks": chunks,
    }


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    flash, print_only = "--flash-attn" in sys.argv, "--print-only" in sys.argv
    if flash and not print_only:
        raise SystemExit("--flash-attn needs --print-only: the fixtures are made with it off")
    models_dir = Path(args[0]) if args else HERE.parent.parent / "models"
    text = (HERE / "data" / "kjv_genesis.txt").read_text(encoding="utf-8")
    for name, file in MODELS.items():
        fixture = one_model(name, models_dir / file, text, flash)
        if print_only:
            print(name, json.dumps({k: v for k, v in fixture["llama.cpp"].items() if k != "kld"}))
            continue
        out = HERE / "fixtures" / f"fidelity_{name}.json"
        out.write_text(json.dumps(fixture, separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"wrote {out}: {json.dumps(fixture['llama.cpp'])}")


if __name__ == "__main__":
    main()
