#!/usr/bin/env python3
"""The exact forward pass `fluoro eval fidelity` measures engines against: reference_forward.py
(float64 numpy, weights dequantized by the `gguf` package) over fixed token windows, written as
the LM head's input at every scored position - the tool multiplies it by the file's LM head in
float64 itself, so the file holds n_embd numbers per position instead of n_vocab.

Usage: fidelity_reference.py MODEL CHUNKS_JSON OUT [--chunks N]
  CHUNKS_JSON  a JSON object with "n_ctx" and "chunks" (token windows of n_ctx ids, evaluated
               as given: the first id of each is already BOS where the vocabulary adds one), e.g.
               tests/reference/fixtures/fidelity_smollm2.json from make_fidelity_fixtures.py;
               its "llama.cpp" entry (that engine's figures against this reference, measured
               when the fixture was made) is copied into OUT so the tool prints both.
  --chunks N   only the first N windows

OUT (little-endian):
  8 bytes "FLFIDEL1", uint32 H, H bytes of JSON header, then rows x n_embd float64: the final
  norm's output at positions first_scored .. n_ctx-2 of each window in order (the position
  predicting the next token; llama.cpp's perplexity and KL-divergence tools score the same
  second half). The header's "check" holds, for the first scored row, the reference's own
  logits of its 8 most likely tokens and the log-sum-exp over the whole vocabulary: the tool
  recomputes them from the stored row and refuses the file when they differ.
"""
from __future__ import annotations

import functools
import json
import struct
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import reference_forward as rf  # noqa: E402
from make_tokenizer_fixtures import sha256_of  # noqa: E402

MAGIC = b"FLFIDEL1"


def logsumexp(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=-1, keepdims=True)
    return (np.log(np.exp(x - m).sum(axis=-1, keepdims=True)) + m)[..., 0]


def cached_model(path: Path) -> rf.GgufModel:
    """The model with each weight dequantized once (about 8 bytes per parameter held), not once
    per window."""
    m = rf.GgufModel(str(path))
    m.weight = functools.lru_cache(maxsize=None)(m.weight)
    return m


def scored_hidden(m: rf.GgufModel, window: list[int]) -> np.ndarray:
    """The LM head's input at the window's scored positions: (n_ctx/2 - 1, n_embd) float64."""
    n_ctx = len(window)
    return rf.forward(m, window, hidden_only=True)[n_ctx // 2:n_ctx - 1]


def head_check(m: rf.GgufModel, window: list[int]) -> dict:
    """The full reference's logits at the window's first scored position (a forward pass over
    the tokens up to it, ending in the real LM head): its 8 largest and the log-sum-exp."""
    first = len(window) // 2
    logits = rf.forward(m, window[:first + 1], last_only=True)[0]
    top = np.argsort(-logits)[:8]
    return {"row": 0, "ids": [int(i) for i in top], "logits": [float(logits[i]) for i in top],
            "logsumexp": float(logsumexp(logits))}


def main() -> None:
    args = sys.argv[1:]
    limit = None
    if "--chunks" in args:
        i = args.index("--chunks")
        limit = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 3:
        raise SystemExit(__doc__)
    model_path, chunks_path, out_path = Path(args[0]), Path(args[1]), Path(args[2])
    spec = json.loads(chunks_path.read_text(encoding="utf-8"))
    n_ctx, chunks = int(spec["n_ctx"]), spec["chunks"][:limit]
    if any(len(c) != n_ctx for c in chunks):
        raise SystemExit(f"{chunks_path}: every window must hold n_ctx = {n_ctx} ids")
    sha = sha256_of(model_path)
    if spec.get("model_sha256") and spec["model_sha256"] != sha:
        raise SystemExit(f"{model_path} is not the file {chunks_path} was made for "
                         f"(sha256 {sha}, expected {spec['model_sha256']})")
    m = cached_model(model_path)
    start = time.time()
    rows = []
    for c, window in enumerate(chunks):
        rows.append(scored_hidden(m, window))
        print(f"[{c + 1}/{len(chunks)}] {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    hidden = np.concatenate(rows).astype("<f8")
    header = {
        "format": 1, "generator": "tests/reference/fidelity_reference.py",
        "model_file": model_path.name, "model_sha256": sha, "arch": m.arch,
        "n_ctx": n_ctx, "first_scored": n_ctx // 2, "chunks": chunks,
        "n_embd": int(hidden.shape[1]), "rows": int(hidden.shape[0]),
        "check": head_check(m, chunks[0]),
        "text": spec.get("text"),
    }
    if "llama.cpp" in spec and limit in (None, len(spec["chunks"])):
        header["llama.cpp"] = spec["llama.cpp"]
    blob = json.dumps(header, separators=(",", ":")).encode("utf-8")
    with open(out_path, "wb") as f:
        f.write(MAGIC + struct.pack("<I", len(blob)) + blob)
        f.write(hidden.tobytes())
    print(f"wrote {out_path}: {hidden.shape[0]} rows x {hidden.shape[1]} "
          f"({time.time() - start:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
