#!/usr/bin/env python3
"""scripts/make_shape_model.py: every shape, cut to 2 layers and a 512-token vocabulary, has the
real model's hyperparameters and tensor shapes (checked against the figures published in each
model's config.json, written out here, not taken from the script), the same bytes on a second run
(deterministic), a parameter count (--params) equal to the sum of the file's tensors, and loads and
generates in fluoro. The whole shapes are the same code with the real layer and vocabulary counts.
  usage: make_shape_model_test.py SCRIPT FLUORO
"""
import hashlib
import os
import subprocess
import sys
import tempfile

import gguf

# config.json figures: hidden, layers, heads, kv heads, head dim, intermediate, vocab, experts
REAL = {
    "llama-3.2-1b": (2048, 16, 32, 8, 64, 8192, 128256, 0),
    "llama-3.2-3b": (3072, 28, 24, 8, 128, 8192, 128256, 0),
    "llama-3.1-8b": (4096, 32, 32, 8, 128, 14336, 128256, 0),
    "gemma-3-4b": (2560, 34, 8, 4, 256, 10240, 262208, 0),
    "olmoe-1b-7b": (2048, 16, 16, 16, 128, 1024, 50304, 64),
}
# published parameter counts (text weights), billions
REAL_PARAMS = {"llama-3.2-1b": 1.24, "llama-3.2-3b": 3.21, "llama-3.1-8b": 8.03,
               "gemma-3-4b": 3.88, "olmoe-1b-7b": 6.92}


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def field(reader, key):
    f = reader.fields[key]
    return f.contents()


def main():
    script, fluoro = sys.argv[1], sys.argv[2]
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    # TEST_TMPDIR: the suite's scratch folder (scripts/test.sh); each shape's files (up to 1.6 GB
    # twice) are removed once checked.
    with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as tmp:
        for shape, (embd, layers, heads, kv, hd, ffn, vocab, experts) in REAL.items():
            n_params = int(subprocess.check_output(["python3", script, "--params", shape]))
            check(abs(n_params / 1e9 - REAL_PARAMS[shape]) < 0.01,
                  f"{shape}: --params {n_params / 1e9:.3f} B, published {REAL_PARAMS[shape]} B")
            out = os.path.join(tmp, shape + ".gguf")
            again = os.path.join(tmp, shape + ".again.gguf")
            for path in (out, again):
                subprocess.run(["python3", script, shape, path, "--layers", "2", "--vocab", "512"],
                               check=True)
            check(sha(out) == sha(again), f"{shape}: two runs wrote different bytes")
            r = gguf.GGUFReader(out)
            arch = field(r, "general.architecture")
            check(field(r, f"{arch}.embedding_length") == embd, f"{shape}: embedding_length")
            check(field(r, f"{arch}.block_count") == 2, f"{shape}: block_count")
            check(field(r, f"{arch}.attention.head_count") == heads, f"{shape}: head_count")
            check(field(r, f"{arch}.attention.head_count_kv") == kv, f"{shape}: head_count_kv")
            t = {x.name: [int(d) for d in x.shape] for x in r.tensors}  # ggml order: n_in first
            check(t["blk.0.attn_q.weight"] == [embd, heads * hd], f"{shape}: attn_q {t['blk.0.attn_q.weight']}")
            check(t["blk.0.attn_k.weight"] == [embd, kv * hd], f"{shape}: attn_k")
            check(t["blk.1.attn_output.weight"] == [heads * hd, embd], f"{shape}: attn_output")
            if experts:
                check(t["blk.0.ffn_up_exps.weight"] == [embd, ffn, experts], f"{shape}: experts")
                check(t["blk.0.ffn_gate_inp.weight"] == [embd, experts], f"{shape}: router")
            else:
                check(t["blk.0.ffn_up.weight"] == [embd, ffn], f"{shape}: ffn_up")
                check(t["blk.1.ffn_down.weight"] == [ffn, embd], f"{shape}: ffn_down")
            check(t["token_embd.weight"] == [embd, 512], f"{shape}: token_embd")
            # the file's weights are exactly what --params counts for these layers and vocabulary
            counted = sum(int(x.n_elements) for x in r.tensors
                          if len(x.shape) > 1)
            small = int(subprocess.check_output(
                ["python3", "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                 "import make_shape_model as m; s = m.SHAPES[sys.argv[2]]; "
                 "print(m.parameters(m.Shape(**{**s.__dict__, 'layers': 2, 'vocab': 512})))",
                 os.path.dirname(os.path.abspath(script)), shape]))
            check(counted == small, f"{shape}: file holds {counted} weights, --params counts {small}")
            # fluoro loads it and runs a prefill and decode steps on it (random token ids: the
            # placeholder vocabulary has no text to tokenize)
            run = subprocess.run([fluoro, "bench", out, "-p", "16", "-n", "4", "-r", "1",
                                  "-t", "2", "-c", "64"], capture_output=True, text=True)
            check(run.returncode == 0, f"{shape}: fluoro refused it: {run.stderr.strip()[-300:]}")
            os.remove(out)
            os.remove(again)
    for f in failures:
        print("FAIL:", f)
    print(f"{len(REAL) - len({f.split(':')[0] for f in failures})} passed, "
          f"{len({f.split(':')[0] for f in failures})} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
