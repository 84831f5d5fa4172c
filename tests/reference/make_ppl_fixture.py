#!/usr/bin/env python3
"""Writes fixtures/ppl_llamacpp.json: llama.cpp's perplexity of SmolLM2-135M-Instruct on the
first 8192 tokens of data/kjv_genesis.txt (King James Genesis, from Debian's bible-kjv-text via
make_kjv_text.sh), context 512 — computed the way llama.cpp's perplexity tool does: independent
512-token chunks, the first token of each replaced by BOS only when the vocabulary adds BOS
(SmolLM2's does not), and only the second half of each chunk scored.

llama.cpp runs through llama-cpp-python (PyPI) with the same token ids (from the independent
reference tokenizer of make_tokenizer_fixtures.py) — the ids are stored too, so the C++ test can
check that our tokenizer produced the same 8192 tokens.
Usage: python3 tests/reference/make_ppl_fixture.py [models_dir]
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import llama_cpp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_tokenizer_fixtures as tokfix  # noqa: E402

N_CTX, N_TOKENS = 512, 8192


def main():
    models_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parent.parent / "models"
    path = models_dir / "SmolLM2-135M-Instruct.Q4_1.gguf"
    encode, _, tok_info = tokfix.build_smollm2_reference(tokfix.GgufTokenizerData(path))
    text = (HERE / "data" / "kjv_genesis.txt").read_text(encoding="utf-8")
    ids = list(encode(text, False))[:N_TOKENS]
    assert len(ids) == N_TOKENS, len(ids)
    llm = llama_cpp.Llama(str(path), n_ctx=N_CTX, n_batch=N_CTX, n_threads=2, logits_all=True,
                          flash_attn=False, verbose=False)
    nll, count, running = 0.0, 0, []
    for c in range(N_TOKENS // N_CTX):
        chunk = ids[c * N_CTX:(c + 1) * N_CTX]  # SmolLM2 adds no BOS: chunk kept as is
        llm.reset()
        llm.eval(chunk)
        for j in range(N_CTX // 2, N_CTX - 1):
            logits = np.asarray(llm.scores[j], dtype=np.float64)
            m = logits.max()
            nll += math.log(np.exp(logits - m).sum()) + m - logits[chunk[j + 1]]
            count += 1
        running.append(math.exp(nll / count))
        print(f"[{c + 1}]{running[-1]:.4f}", flush=True)
    fixture = {
        "about": "llama.cpp perplexity on a fixed public-domain text; regenerate with the script.",
        "generator": "tests/reference/make_ppl_fixture.py",
        "reference": {"engine": "llama.cpp via llama-cpp-python", "version": llama_cpp.__version__,
                      "tokenizer": tok_info},
        "model_file": path.name, "model_sha256": tokfix.sha256_of(path),
        "text": "tests/reference/data/kjv_genesis.txt", "n_ctx": N_CTX, "n_tokens": N_TOKENS,
        "scored_tokens": count, "ppl": round(math.exp(nll / count), 6), "running_ppl": running,
        "ids": ids,
    }
    out = HERE / "fixtures" / "ppl_llamacpp.json"
    out.write_text(json.dumps(fixture, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {out}: ppl {fixture['ppl']}")


if __name__ == "__main__":
    main()
