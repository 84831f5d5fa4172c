#!/usr/bin/env python3
"""scripts/spec/replay_lookup.py against the engine: `fluoro bench spec --save-tokens` on
SmolLM2's copy and summary prompts, with the default drafter settings and with a longer draft
after a one-token match; the replay must reproduce the engine's drafted, accepted and forward
counts for every prompt under both (its port of the drafter and the draft-length rule is then
faithful), and a changed policy must change the expected speedup it reports.

usage: replay_lookup_test.py FLUORO_BIN REPLAY_SCRIPT MODELS_DIR
Exit 77 (skip) when the model is missing, unless FLUORO_REQUIRE_MODELS=1.
"""
import json
import os
import subprocess
import sys
import tempfile

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"


def main():
    fluoro, replay, models_dir = sys.argv[1:4]
    model = os.path.join(models_dir, MODEL)
    if not os.path.exists(model):
        if os.environ.get("FLUORO_REQUIRE_MODELS") == "1":
            print(f"FAIL: missing {model} (FLUORO_REQUIRE_MODELS=1)", file=sys.stderr)
            return 1
        print(f"SKIP: missing {model}")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        for extra in ([], ["--draft-max", "6"]):
            saved = os.path.join(tmp, "run.json")
            subprocess.run([fluoro, "bench", "spec", model, "-n", "48", "-r", "1", "-t", "2",
                            "--category", "copy,summarize", "--save-tokens",
                            saved] + extra, check=True, capture_output=True)
            with open(saved) as f:
                run = json.load(f)
            assert run["draft_max_unigram"] == 1 and run["n_gen"] == 48, run.keys()
            prompts = [p for p in run["prompts"] if p["drafter"] == "prompt_lookup"]
            assert len(prompts) == 5, len(prompts)
            for p in prompts:
                assert p["prompt_tokens"] and p["output_tokens"], p["prompt"]
                assert p["drafted"] > 0 and p["target_forwards"] > 0, p
            out = subprocess.run([sys.executable, replay, saved, "--unigram", "1", "8"],
                                 capture_output=True, text=True)
            print(out.stdout, out.stderr)
            if out.returncode != 0 or "reproduces the engine's counts on all 5" not in out.stdout:
                print("FAIL: the replay does not reproduce the engine", file=sys.stderr)
                return 1
            blocks = out.stdout.split("\ndraft_max_unigram=")[1:]
            if len(blocks) != 2 or blocks[0] == blocks[1].replace("8 ngram", "1 ngram", 1):
                print("FAIL: a different policy changed nothing", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
