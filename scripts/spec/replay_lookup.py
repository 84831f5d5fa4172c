#!/usr/bin/env python3
"""Replay prompt-lookup drafting offline over a `fluoro bench spec --save-tokens FILE` run.

Greedy decoding is deterministic, so a prompt's output is the same whatever drafts are tried:
given the prompt, the output and the measured verify costs v(k) (one target forward over k + 1
tokens relative to one token), the number and sizes of the target forwards any drafting policy
would need follow exactly, and with them its expected speedup

    (output tokens - 1) / sum over steps of v(drafted tokens)

(plain decoding makes one forward per token after the first; drafting time, nearly nothing for
prompt lookup, is left out). This evaluates policies without the noise of timing each one.

The drafter and the draft-length rule are ports of engine/speculative/prompt_lookup.cpp and
spec_generate.cpp (greedy, adaptive). With the settings the file was made with, the replay
must reproduce the engine's drafted, accepted and forward counts: it checks that first and
exits 1 when they differ (the port is out of date).

Usage:
  fluoro bench spec MODEL --drafter prompt_lookup --save-tokens run.json
  scripts/spec/replay_lookup.py run.json                       # check + the file's settings
  scripts/spec/replay_lookup.py run.json --unigram 1 8 --ngram-min 1 2
"""

import argparse
import itertools
import json
import sys
from collections import defaultdict


def lookup(ctx, max_ngram, min_ngram, max_draft, max_draft_unigram):
    """prompt_lookup_draft(): the tokens after the most recent earlier occurrence of the
    context's longest matching suffix (max_ngram down to min_ngram)."""
    n_ctx = len(ctx)
    for n in range(max_ngram, min_ngram - 1, -1):
        if n >= n_ctx:
            continue
        suffix = ctx[n_ctx - n:]
        for s in range(n_ctx - n - 1, -1, -1):
            if ctx[s:s + n] == suffix:
                most = min(max_draft, max_draft_unigram) if n == 1 else max_draft
                return ctx[s + n:s + n + most]
    return []


def replay(prompt, output, end_token, n_gen, policy):
    """One greedy speculative run: (drafted, accepted, forwards, cost in one-token forwards,
    unknown). unknown: drafted tokens after an accepted end token in the last step, which the
    engine verifies against picks the file does not hold (the engine's accepted count may
    include up to that many more)."""
    target = output + ([end_token] if end_token is not None else [])
    n_out = len(output)
    k = policy["draft_max"]
    emitted = drafted = accepted = forwards = unknown = 0
    cost = 0.0
    while True:
        n_max = min(k, n_gen - emitted - 1)
        ctx = prompt + output[:emitted]  # ends with the pending token
        draft = []
        if n_max > 0:
            draft = lookup(ctx, policy["ngram_max"], policy["ngram_min"], n_max,
                           policy["draft_max_unigram"])
        a = 0
        while a < len(draft) and emitted + a < len(target) and draft[a] == target[emitted + a]:
            a += 1
        forwards += 1
        drafted += len(draft)
        accepted += a
        cost += policy["verify_cost"][len(draft)]
        if emitted + a + 1 > n_out:  # the end token was emitted
            if emitted + a == len(target):  # ... as an accepted draft: what follows is unknown
                unknown = len(draft) - a
            break
        emitted += a + 1
        if emitted >= n_gen:
            break
        if a == len(draft) and draft:
            k = policy["draft_max"]
        else:
            k = max(1, a + 1)
    return drafted, accepted, forwards, cost, unknown


def evaluate(run, policy):
    """Expected speedup per prompt and per category (token-weighted, as the bench's)."""
    per_prompt = []
    plain = defaultdict(float)
    spec = defaultdict(float)
    for p in run["prompts"]:
        if p["drafter"] != "prompt_lookup":
            continue
        drafted, accepted, forwards, cost, unknown = replay(
            p["prompt_tokens"], p["output_tokens"], p["end_token"], run["n_gen"], policy)
        steps = max(len(p["output_tokens"]) - 1, 0)
        per_prompt.append((p, drafted, accepted, forwards, steps / cost if cost else 0.0, unknown))
        plain[p["category"]] += steps
        spec[p["category"]] += cost
    per_category = {c: plain[c] / spec[c] for c in plain if spec[c] > 0}
    return per_prompt, per_category


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="file written by fluoro bench spec --save-tokens")
    ap.add_argument("--unigram", type=int, nargs="+",
                    help="draft lengths after a one-token match to try (default: the file's)")
    ap.add_argument("--ngram-min", type=int, nargs="+", help="shortest n-grams to try")
    ap.add_argument("--ngram-max", type=int, nargs="+", help="longest n-grams to try")
    ap.add_argument("--draft-max", type=int, nargs="+",
                    help="draft lengths at most to try (up to the file's: v(k) is measured so far)")
    ap.add_argument("--verify-cost", type=lambda s: [float(v) for v in s.split(",")],
                    help="v(0),v(1),... to evaluate the policies with instead of the file's "
                         "(after the check, which uses the file's)")
    args = ap.parse_args()
    with open(args.run) as f:
        run = json.load(f)
    base = {k: run[k] for k in ("draft_max", "ngram_max", "ngram_min", "draft_max_unigram",
                                "verify_cost")}
    if len(base["verify_cost"]) <= base["draft_max"]:
        sys.exit("replay: verify_cost has fewer than draft_max + 1 entries")

    per_prompt, per_category = evaluate(run, base)
    if not per_prompt:
        sys.exit("replay: the file has no prompt_lookup run")
    mismatches = 0
    for p, drafted, accepted, forwards, _, unknown in per_prompt:
        want = (p["drafted"], p["accepted"], p["target_forwards"])
        same = (drafted, forwards) == (want[0], want[2]) and \
            accepted <= want[1] <= accepted + unknown
        if not same:
            mismatches += 1
            print(f"replay differs from the engine on {p['category']} prompt {p['prompt']}: "
                  f"drafted/accepted/forwards {drafted}/{accepted}/{forwards}, engine "
                  f"{want[0]}/{want[1]}/{want[2]}")
    if mismatches:
        sys.exit(1)
    print(f"replay reproduces the engine's counts on all {len(per_prompt)} prompts")
    print("verify cost v(k): " + " ".join(f"{v:.2f}" for v in base["verify_cost"]))

    if args.verify_cost:
        if len(args.verify_cost) != len(base["verify_cost"]):
            sys.exit(f"replay: --verify-cost needs {len(base['verify_cost'])} values")
        base["verify_cost"] = args.verify_cost
        print("evaluated with v(k): " + " ".join(f"{v:.2f}" for v in base["verify_cost"]))

    grid = itertools.product(args.unigram or [base["draft_max_unigram"]],
                             args.ngram_min or [base["ngram_min"]],
                             args.ngram_max or [base["ngram_max"]],
                             args.draft_max or [base["draft_max"]])
    for unigram, ngram_min, ngram_max, draft_max in grid:
        if ngram_min > ngram_max or not 1 <= draft_max <= base["draft_max"]:
            continue
        policy = dict(base, draft_max_unigram=unigram, ngram_min=ngram_min, ngram_max=ngram_max,
                      draft_max=draft_max)
        per_prompt, per_category = evaluate(run, policy)
        print(f"\ndraft_max_unigram={unigram} ngram_min={ngram_min} ngram_max={ngram_max} "
              f"draft_max={draft_max}: expected speedup")
        print("  " + "  ".join(f"{c} {s:.2f}x" for c, s in per_category.items()))
        for p, drafted, accepted, forwards, speedup, _ in per_prompt:
            print(f"    {p['category']:10s} prompt {p['prompt']:2d}: {speedup:.2f}x "
                  f"(drafted {drafted}, accepted {accepted}, forwards {forwards})")


if __name__ == "__main__":
    main()
