#!/usr/bin/env python3
"""`fluoro serve` against the real `openai` Python client on SmolLM2: one plain and one streamed
chat completion (temperature 0, max_tokens 8), their usage and the `timings` block; logprobs and
top_logprobs, streamed or not; `stop`
(a word of the reply: the reply ends before it, streamed or not); a client that times out on a
non-streamed request (its generation is cancelled: the server's log says stop=cancelled).

Usage: openai_client_test.py FLUORO_BINARY MODEL.gguf
Exit 77 (skip) when the model or the openai package is missing, unless FLUORO_REQUIRE_MODELS=1.
"""
import json
import math
import os
import subprocess
import sys
import threading
import time
import urllib.request

from server_test_support import binary_model_openai, free_port, stop_server, wait_ready



def main():
    args = binary_model_openai(__doc__)
    if args is None:
        return 2
    fluoro, model, openai = args

    port = free_port()
    proc = subprocess.Popen([fluoro, "serve", model, "--port", str(port), "--api-key", "k3y",
                             "-t", "2"], stderr=subprocess.PIPE, text=True)
    reader = threading.Thread(target=lambda: _log.extend(iter(proc.stderr.readline, "")),
                              daemon=True)
    reader.start()
    try:
        models = wait_ready(proc, port, key="k3y")
        model_id = models["data"][0]["id"]
        assert model_id == os.path.basename(model), models

        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k3y",
                               max_retries=0, timeout=120)
        listed = client.models.list().data
        assert [m.id for m in listed] == [model_id]
        # vLLM's max_model_len (the served context) and llama-server-style meta.
        assert listed[0].model_extra["max_model_len"] == listed[0].model_extra["meta"]["n_ctx"] > 0
        assert listed[0].model_extra["meta"]["arch"] == "llama", listed[0]
        messages = [{"role": "system", "content": "You are a helpful assistant."},
                    {"role": "user", "content": "What is the capital of France?"}]

        r = client.chat.completions.create(model=model_id, messages=messages, temperature=0,
                                           max_tokens=8, seed=1)
        text = r.choices[0].message.content
        print("plain:", repr(text), r.usage)
        assert r.object == "chat.completion"
        assert r.choices[0].message.role == "assistant"
        assert text, r
        assert r.choices[0].finish_reason in ("stop", "length")
        u = r.usage
        assert 0 < u.completion_tokens <= 8, u
        assert u.prompt_tokens > 0 and u.total_tokens == u.prompt_tokens + u.completion_tokens, u
        timings = r.model_extra["timings"]
        assert timings["prompt_tokens"] == u.prompt_tokens, timings
        assert timings["predicted_tokens"] == u.completion_tokens, timings
        for k in ("cached_tokens", "prompt_ms", "ttft_ms", "predicted_per_second",
                  "drafted_tokens", "accepted_tokens"):
            assert k in timings, (k, timings)

        stream = client.chat.completions.create(model=model_id, messages=messages, temperature=0,
                                                max_tokens=8, seed=1, stream=True,
                                                stream_options={"include_usage": True})
        pieces, finish, usage, stimings = [], None, None, None
        for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage
                stimings = chunk.model_extra.get("timings")
            for c in chunk.choices:
                if c.delta.content:
                    pieces.append(c.delta.content)
                if c.finish_reason:
                    finish = c.finish_reason
        streamed = "".join(pieces)
        print("streamed:", repr(streamed), usage)
        assert streamed == text, (streamed, text)
        assert finish == r.choices[0].finish_reason, finish
        assert usage is not None and usage.completion_tokens == u.completion_tokens, usage
        assert usage.prompt_tokens == u.prompt_tokens, usage
        # The same prompt again: all of it but the last token comes from the KV cache.
        assert usage.prompt_tokens_details.cached_tokens > 0, usage
        assert stimings and stimings["cached_tokens"] == usage.prompt_tokens_details.cached_tokens

        # stop: the second word of a longer reply (with its leading space) ends it.
        long = client.chat.completions.create(model=model_id, messages=messages, temperature=0,
                                              max_tokens=24, seed=1).choices[0].message.content
        words = long.split(" ")
        assert len(words) >= 3, long
        stop = " " + words[2]
        expected = long[:long.index(stop)]
        cut = client.chat.completions.create(model=model_id, messages=messages, temperature=0,
                                             max_tokens=24, seed=1, stop=[stop, "\u0001"])
        print("stop", repr(stop), "->", repr(cut.choices[0].message.content))
        assert cut.choices[0].message.content == expected, (cut, expected)
        assert cut.choices[0].finish_reason == "stop", cut
        pieces = []
        for chunk in client.chat.completions.create(model=model_id, messages=messages,
                                                    temperature=0, max_tokens=24, seed=1,
                                                    stop=stop, stream=True):
            for c in chunk.choices:
                if c.delta.content:
                    pieces.append(c.delta.content)
                    assert expected.startswith("".join(pieces)), pieces  # never past the cut
        assert "".join(pieces) == expected, pieces

        # logprobs: one entry per generated token, its text the reply's when concatenated
        # (an ASCII reply here), greedy: the chosen token is the most likely alternative with the
        # same log probability, and the alternatives' probabilities are a part of one.
        lp = client.chat.completions.create(model=model_id, messages=messages, temperature=0,
                                            max_tokens=8, seed=1, logprobs=True, top_logprobs=3)
        content = lp.choices[0].logprobs.content
        print("logprobs:", [(e.token, round(e.logprob, 3)) for e in content])
        assert len(content) == lp.usage.completion_tokens, (content, lp.usage)
        assert lp.choices[0].message.content == text
        assert "".join(e.token for e in content).startswith(text), content
        for e in content:
            assert bytes(e.bytes).decode() == e.token, e
            assert len(e.top_logprobs) == 3, e
            assert e.top_logprobs[0].token == e.token, e
            assert abs(e.top_logprobs[0].logprob - e.logprob) < 1e-6, e
            probs = [math.exp(t.logprob) for t in e.top_logprobs]
            assert probs == sorted(probs, reverse=True) and sum(probs) <= 1 + 1e-5, e
        pieces, entries = [], []
        for chunk in client.chat.completions.create(model=model_id, messages=messages,
                                                    temperature=0, max_tokens=8, seed=1,
                                                    stream=True, logprobs=True, top_logprobs=2):
            for c in chunk.choices:
                if c.delta.content:
                    pieces.append(c.delta.content)
                if c.logprobs and c.logprobs.content:
                    entries += c.logprobs.content
        assert "".join(pieces) == text, pieces
        assert [(e.token, e.logprob) for e in entries] == \
            [(e.token, e.logprob) for e in content], (entries, content)
        assert all(len(e.top_logprobs) == 2 for e in entries), entries
        try:
            client.chat.completions.create(model=model_id, messages=messages, max_tokens=1,
                                           top_logprobs=2)
            raise AssertionError("top_logprobs without logprobs was accepted")
        except openai.BadRequestError:
            pass

        # n choices, as the client parses them: choice i is the one-choice answer of seed + i,
        # plain or streamed (chunks gathered by index).
        sampled = dict(model=model_id, messages=messages, temperature=0.9, max_tokens=8)
        three = client.chat.completions.create(n=3, seed=11, **sampled)
        assert [c.index for c in three.choices] == [0, 1, 2], three
        singles = [client.chat.completions.create(seed=11 + i, **sampled) for i in range(3)]
        assert [c.message.content for c in three.choices] == \
            [r.choices[0].message.content for r in singles], (three, singles)
        # The prompt counted once, every choice's tokens.
        assert three.usage.prompt_tokens == singles[0].usage.prompt_tokens, three.usage
        assert three.usage.completion_tokens == \
            sum(r.usage.completion_tokens for r in singles), (three.usage, singles)
        by_index = {}
        for chunk in client.chat.completions.create(n=3, seed=11, stream=True, **sampled):
            for c in chunk.choices:
                if c.delta.content:
                    by_index[c.index] = by_index.get(c.index, "") + c.delta.content
        assert [by_index.get(i, "") for i in range(3)] == \
            [c.message.content for c in three.choices], (by_index, three)
        print("n=3:", [c.message.content for c in three.choices])

        # POST /v1/completions (legacy text completion): a plain-text prompt, no template; greedy,
        # so the text is `fluoro run --raw`'s continuation of the same prompt, plain or streamed.
        prompt = "The capital of France is"
        c = client.completions.create(model=model_id, prompt=prompt, max_tokens=8, temperature=0)
        print("completion:", repr(c.choices[0].text), c.usage)
        assert c.object == "text_completion" and c.id.startswith("cmpl-"), c
        assert c.usage.completion_tokens == 8 and c.choices[0].finish_reason == "length", c
        cli = subprocess.run([fluoro, "run", "--raw", model, prompt, "-n", "8", "--temp", "0",
                              "-t", "2", "-q"], capture_output=True, text=True, check=True).stdout
        assert cli.startswith(prompt), cli
        tail = cli[len(prompt):]
        assert tail.startswith(c.choices[0].text) and tail[len(c.choices[0].text):].strip() == "", \
            (tail, c.choices[0].text)
        streamed = "".join(ch.choices[0].text for ch in client.completions.create(
            model=model_id, prompt=[prompt], max_tokens=8, temperature=0, stream=True)
            if ch.choices)
        assert streamed == c.choices[0].text, (streamed, c.choices[0].text)
        # The default length is OpenAI's 16; what it cannot honour is refused by name.
        assert client.completions.create(model=model_id, prompt=prompt, temperature=0) \
            .usage.completion_tokens <= 16
        for bad in ({"echo": True}, {"best_of": 2}, {"logprobs": 2}, {"suffix": "!"}):
            try:
                client.completions.create(model=model_id, prompt=prompt, max_tokens=1, **bad)
                raise AssertionError(f"{bad} was accepted")
            except openai.BadRequestError as e:
                assert list(bad)[0] in str(e), e

        # A client that gives up on a non-streamed reply: its generation stops.
        try:
            openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k3y", max_retries=0,
                          timeout=0.5).chat.completions.create(
                model=model_id, temperature=0, max_tokens=2000,
                messages=[{"role": "user", "content": "Write a very long story about a ship."}])
            raise AssertionError("a 2000-token reply came within 0.5 s")
        except openai.APITimeoutError:
            pass
        # The engine stops within a token; the log line comes once the handler returns.
        deadline = time.time() + 60
        while time.time() < deadline and not cancelled_logged(proc):
            time.sleep(0.2)
        assert cancelled_logged(proc), "the timed-out request was not cancelled"

        try:
            openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="wrong",
                          max_retries=0).models.list()
            raise AssertionError("a wrong API key was accepted")
        except openai.AuthenticationError:
            pass
        print("OK")
        return 0
    finally:
        stop_server(proc)
        reader.join(timeout=10)
        sys.stderr.write("".join(_log))


_log = []  # serve's stderr lines, read by a thread


def cancelled_logged(proc):
    """Whether serve's stderr has logged a request cancelled by its client (status 499)."""
    return any(" 499 " in line and "stop=cancelled" in line for line in list(_log))


if __name__ == "__main__":
    sys.exit(main())
