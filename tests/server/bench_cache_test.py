#!/usr/bin/env python3
"""`fluoro bench cache --quick` on SmolLM2 (scripts/bench_cache.py through the CLI): the numbers
come from the server's usage, so these checks fail when the prefix cache stops working.

- cache on: >= 90 % of the prompt tokens after the first request come from the cache, and every
  later turn reuses more than the system prompt (its own conversation, from the cache);
- cache off (--prefix-cache 0): no conversation's own history is ever reused. The server still
  reuses the common prefix with the previous request (its live sequence), which on this
  interleaved workload is the shared system prompt, so "off" is checked against that: no request
  reuses more than the longest first-turn match with the cache on, which is the system prompt;
- cache breaker (a request id at the start of the system prompt): < 20 % from the cache;
- restart (--prefix-cache-file): after a restart every first-turn prompt but its last token
  comes from the file.

Usage: bench_cache_test.py FLUORO_BINARY MODEL.gguf [EXTRA BENCH FLAGS]
(e.g. --slots 1, which leaves no room for the other conversation's state: the checks fail)
Exit 77 (skip) when the model or the openai package is missing, unless FLUORO_REQUIRE_MODELS=1.
"""
import json
import subprocess
import sys

from server_test_support import require_model_and_openai


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    fluoro, model = sys.argv[1], sys.argv[2]
    require_model_and_openai(model)

    cmd = [fluoro, "bench", "cache", model, "--quick", "--json", "-t", "2"] + sys.argv[3:]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        print(p.stdout)
        print(f"FAIL: {' '.join(cmd)} exited with {p.returncode}", file=sys.stderr)
        return 1
    res = json.loads(p.stdout)
    on, off, brk = (res["modes"][m] for m in ("on", "off", "breaker"))
    for m in (on, off, brk):
        print(f"{m['mode']:8} prompt {m['prompt_tokens']:6} cached {m['cached_tokens']:6} "
              f"after first {m['cached_pct_after_first']:5.1f}% TTFT median "
              f"{m['ttft_ms_median']:.1f} ms")
        assert m["requests"] == 4, m["requests"]
        assert not m["warnings"], m["warnings"]  # every message reached the prompt
        assert all(r["prompt_tokens"] > 1000 for r in m["per_request"]), m["per_request"]

    assert on["cached_pct_after_first"] >= 90.0, on["cached_pct_after_first"]
    # Later turns continue a conversation stored in the cache: all but the new tail is reused.
    assert on["cached_pct_later_turns"] > on["cached_pct_first_turn_after_first"] - 5.0, on

    system_prefix = on["max_cached_first_turn"]  # the shared system prompt, as matched
    assert system_prefix > 1000, system_prefix
    # With the cache every later turn continues its conversation from the cache: more than the
    # system prompt is reused (the other conversation ran in between, so the live sequence
    # alone would give only the system prompt; with --slots 1 this fails).
    short = [r for r in on["per_request"] if r["turn"] > 1 and r["cached_tokens"] <= system_prefix]
    assert not short, f"with the cache on these reused only the system prompt: {short}"
    over = [r for r in off["per_request"] if r["cached_tokens"] > system_prefix]
    assert not over, f"with --prefix-cache 0 these reused conversation history: {over}"
    assert off["cached_pct_later_turns"] < on["cached_pct_later_turns"] - 2.0, (off, on)
    # From turn 2 on, the cache computes only the new tail (the reply and the tool result);
    # without it the conversation's whole history after the system prompt is computed again.
    off_later, on_later = off["computed_tokens_later_turns"], on["computed_tokens_later_turns"]
    assert off_later > 1.5 * on_later, (off_later, on_later)
    if any(r.get("cache_source") for r in off["per_request"]):
        assert all(r["cache_source"] != "prefix_cache" for r in off["per_request"]), off

    assert brk["cached_pct_after_first"] < 20.0, brk["cached_pct_after_first"]

    # Across a restart: the restored server's first request finds its whole prompt but the last
    # token in the file, where the cold server's first request found nothing.
    rs = res["modes"]["restart"]
    print(f"restart  first request TTFT {rs['first_request_ttft_ms_cold']:.1f} ms cold, "
          f"{rs['first_request_ttft_ms_restored']:.1f} ms restored; {rs['server_notes']}")
    assert rs["first_request_cached_tokens_restored"] == rs["first_request_prompt_tokens"] - 1, rs
    assert rs["per_request"][0]["cached_tokens"] == 0, rs["per_request"][0]
    assert rs["cached_pct_restored"] > 99.0, rs["cached_pct_restored"]
    assert rs["file_bytes"] > 0 and any("restored" in n for n in rs["server_notes"]), rs
    assert res["ratios"]["breaker_cached_pct_after_first"] == brk["cached_pct_after_first"]
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
