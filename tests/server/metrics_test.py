#!/usr/bin/env python3
"""GET /metrics of `fluoro serve` on SmolLM2, read back by prometheus_client's text-format parser
(the reference parser of the format): every family parses, the vLLM names a vLLM dashboard
queries are there with vLLM's types and its model_name label, and the numbers agree with what the
`openai` client was told — prompt and generation token counters equal the sum of the replies'
usage, prefix-cache hits their cached tokens, each request histogram counted once per request,
the TTFT sum at least the engine's own TTFTs (it adds the time from arrival), finish reasons
counted by label, the batch's slots, steps and tokens. A second request with the same system prompt makes the cache hits non-zero.

Usage: metrics_test.py FLUORO_BINARY MODEL.gguf
Exit 77 (skip) when the model or a package is missing, unless FLUORO_REQUIRE_MODELS=1.
"""
import json
import subprocess
import sys
import time
import urllib.request

from server_test_support import binary_model_openai, free_port, skip_or_fail, wait_ready

# vLLM's names (V1 engine, "Production Metrics") and types that Fluoroscope serves with the same
# meaning; counters as the parser names their families (without _total).
VLLM = {
    "vllm:num_requests_running": "gauge",
    "vllm:num_requests_waiting": "gauge",
    "vllm:kv_cache_usage_perc": "gauge",
    "vllm:prompt_tokens": "counter",
    "vllm:generation_tokens": "counter",
    "vllm:prefix_cache_queries": "counter",
    "vllm:prefix_cache_hits": "counter",
    "vllm:spec_decode_num_draft_tokens": "counter",
    "vllm:spec_decode_num_accepted_tokens": "counter",
    "vllm:request_success": "counter",
    "vllm:time_to_first_token_seconds": "histogram",
    "vllm:inter_token_latency_seconds": "histogram",
    "vllm:e2e_request_latency_seconds": "histogram",
    "vllm:request_queue_time_seconds": "histogram",
    "vllm:request_prefill_time_seconds": "histogram",
    "vllm:request_decode_time_seconds": "histogram",
    "vllm:request_prompt_tokens": "histogram",
    "vllm:request_generation_tokens": "histogram",
}


def get(port, path):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


def main():
    args = binary_model_openai(__doc__)
    if args is None:
        return 2
    fluoro, model, openai = args
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        skip_or_fail("the prometheus-client Python package is missing (pip install prometheus-client)")

    port = free_port()
    proc = subprocess.Popen([fluoro, "serve", model, "--port", str(port), "-t", "2"],
                            stderr=subprocess.DEVNULL)
    try:
        model_id = wait_ready(proc, port)["data"][0]["id"]
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none",
                               max_retries=0, timeout=120)
        system = {"role": "system", "content": "You are a terse assistant. Answer in one word."}
        usages, finishes = [], []
        for question, max_tokens in (("Capital of France?", 6), ("Capital of Italy?", 2)):
            r = client.chat.completions.create(
                model=model_id, temperature=0, max_tokens=max_tokens,
                messages=[system, {"role": "user", "content": question}])
            usages.append(r.usage)
            finishes.append(r.choices[0].finish_reason)
        timings = []  # the engine's TTFTs, from a streamed request's usage chunk
        stream = client.chat.completions.create(
            model=model_id, temperature=0, max_tokens=4, stream=True,
            stream_options={"include_usage": True},
            messages=[system, {"role": "user", "content": "Capital of Spain?"}])
        for chunk in stream:
            if chunk.usage:
                usages.append(chunk.usage)
                timings.append(chunk.model_extra["timings"]["ttft_ms"] / 1000)
            if chunk.choices and chunk.choices[0].finish_reason:
                finishes.append(chunk.choices[0].finish_reason)

        # A request leaves the running/waiting gauges when the server has finished its exchange,
        # which can be a moment after the client read the reply's last byte (the streamed one
        # especially): scrape until both are 0, for at most 5 s, then check everything.
        for _ in range(50):
            status, ctype, text = get(port, "/metrics")
            assert status == 200 and ctype.startswith("text/plain; version=0.0.4"), (status, ctype)
            families = {f.name: f for f in text_string_to_metric_families(text)}
            busy = [s.value for n in ("vllm:num_requests_running", "vllm:num_requests_waiting")
                    if n in families for s in families[n].samples]
            if not any(busy):
                break
            time.sleep(0.1)
        for name, kind in VLLM.items():
            assert name in families, f"{name} missing; have {sorted(families)}"
            f = families[name]
            assert f.type == kind, (name, f.type, kind)
            for s in f.samples:
                assert s.labels.get("model_name") == model_id, (name, s)

        def value(name, suffix="", **labels):
            got = [s.value for s in families[name].samples
                   if s.name == name + suffix and all(s.labels.get(k) == v
                                                      for k, v in labels.items())]
            assert len(got) == 1, (name, suffix, labels, got)
            return got[0]

        n = len(usages)
        assert n == 3, usages
        assert value("vllm:prompt_tokens", "_total") == sum(u.prompt_tokens for u in usages)
        assert value("vllm:generation_tokens", "_total") == sum(u.completion_tokens for u in usages)
        assert value("vllm:prefix_cache_queries", "_total") == sum(u.prompt_tokens for u in usages)
        hits = sum(u.prompt_tokens_details.cached_tokens for u in usages)
        assert hits > 0, usages  # the shared system prompt was reused
        assert value("vllm:prefix_cache_hits", "_total") == hits
        for h in ("time_to_first_token_seconds", "e2e_request_latency_seconds",
                  "request_queue_time_seconds", "request_prefill_time_seconds",
                  "request_decode_time_seconds", "request_prompt_tokens",
                  "request_generation_tokens"):
            assert value("vllm:" + h, "_count") == n, h
            assert value("vllm:" + h, "_bucket", le="+Inf") == n, h
        assert value("vllm:request_prompt_tokens", "_sum") == sum(u.prompt_tokens for u in usages)
        # Every reply has at least two tokens here, so each adds completion_tokens - 1 gaps.
        assert value("vllm:inter_token_latency_seconds", "_count") == \
            sum(u.completion_tokens - 1 for u in usages)
        # From arrival, so no shorter than the engine's own TTFT of the streamed request.
        assert value("vllm:time_to_first_token_seconds", "_sum") >= sum(timings) > 0
        stop = sum(1 for f in finishes if f == "stop")
        length = sum(1 for f in finishes if f == "length")
        assert value("vllm:request_success", "_total", finished_reason="stop") == stop
        assert value("vllm:request_success", "_total", finished_reason="length") == length
        assert value("vllm:num_requests_running") == 0
        assert value("vllm:num_requests_waiting") == 0
        # Continuous batching (the default --parallel 4): its slots, and steps that computed at
        # least one token each, at least the tokens computed for the prompts' uncached parts.
        assert value("fluoro:batch_slots") == 4
        steps = value("fluoro:batch_steps", "_total")
        step_tokens = value("fluoro:batch_step_tokens", "_total")
        computed = sum(u.prompt_tokens - u.prompt_tokens_details.cached_tokens for u in usages)
        assert 0 < steps <= step_tokens and step_tokens >= computed, (steps, step_tokens, computed)
        # Buckets are cumulative and end at the count.
        for name in VLLM:
            if VLLM[name] != "histogram":
                continue
            counts = [s.value for s in families[name].samples if s.name == name + "_bucket"]
            assert counts == sorted(counts), (name, counts)
        print(f"{len(families)} families parsed; prompt {value('vllm:prompt_tokens', '_total')}, "
              f"hits {hits}, finishes {finishes}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
