#!/usr/bin/env python3
"""A tool-calling round trip through `fluoro serve` with the real `openai` client, on a synthetic
qwen3 file with Qwen 3's vocabulary and its own chat template (scripted_qwen3_model.py: a
scripted model, so the test is about the path, not a model's judgement):

1. the client offers get_weather; the model's reply is parsed into tool_calls (the Hermes syntax
   Qwen 3's template teaches), finish_reason "tool_calls", arguments {"city": "Paris"};
2. the same streamed: content deltas stop where the call begins, one tool_calls delta follows;
3. the client sends the call back with the tool's result; the template renders it as a
   <tool_response> and the model answers in text, finish_reason "stop", no tool_calls;
4. without tools offered, the same first reply is plain text (nothing parsed);
5. with the reasoning model, reasoning_content and content come apart, streamed or not.

Usage: tool_round_trip_test.py FLUORO_BINARY MODELS_DIR
Exit 77 (skip) when the sdist files, `openai`, `gguf` or numpy are missing, unless
FLUORO_REQUIRE_MODELS=1.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

from server_test_support import free_port, skip_or_fail

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]


def serve(fluoro, model):
    port = free_port()
    proc = subprocess.Popen([fluoro, "serve", model, "--port", str(port), "-t", "2"],
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"fluoro serve exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return proc, port
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("fluoro serve did not answer in time")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    fluoro, models = sys.argv[1], sys.argv[2]
    if not os.path.isdir(os.path.join(models, "llama-cpp-python-0.3.36", "templates")):
        skip_or_fail("the llama-cpp-python sdist files are missing (scripts/fetch-llama-cpp-source.sh)")
    try:
        import openai
        import gguf  # noqa: F401  (scripted_qwen3_model.py writes the file with it)
        import numpy  # noqa: F401
    except ImportError as e:
        skip_or_fail(f"a Python package is missing: {e}")

    with tempfile.TemporaryDirectory() as tmp:
        tools_model = os.path.join(tmp, "tools.gguf")
        reason_model = os.path.join(tmp, "reasoning.gguf")
        for mode, path in (("tools", tools_model), ("reasoning", reason_model)):
            subprocess.run([sys.executable, os.path.join(HERE, "scripted_qwen3_model.py"), mode,
                            path, models], check=True)

        proc, port = serve(fluoro, tools_model)
        try:
            client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none",
                                   max_retries=0, timeout=120)
            messages = [{"role": "user", "content": "What is the weather in Paris?"}]
            r = client.chat.completions.create(model="m", messages=messages, tools=TOOLS,
                                               temperature=0, max_tokens=64)
            choice = r.choices[0]
            print("1:", choice.finish_reason, choice.message)
            assert choice.finish_reason == "tool_calls", choice
            calls = choice.message.tool_calls
            assert len(calls) == 1 and calls[0].type == "function", calls
            assert calls[0].function.name == "get_weather", calls
            assert json.loads(calls[0].function.arguments) == {"city": "Paris"}, calls
            assert not choice.message.content, choice.message

            deltas, streamed_calls, finish = [], [], None
            for chunk in client.chat.completions.create(model="m", messages=messages, tools=TOOLS,
                                                        temperature=0, max_tokens=64,
                                                        stream=True):
                for c in chunk.choices:
                    if c.delta.content:
                        deltas.append(c.delta.content)
                    if c.delta.tool_calls:
                        streamed_calls += c.delta.tool_calls
                    if c.finish_reason:
                        finish = c.finish_reason
            print("2:", finish, deltas, streamed_calls)
            assert "<tool_call>" not in "".join(deltas), deltas
            assert finish == "tool_calls" and len(streamed_calls) == 1, (finish, streamed_calls)
            assert streamed_calls[0].function.name == "get_weather"
            assert json.loads(streamed_calls[0].function.arguments) == {"city": "Paris"}

            messages.append({"role": "assistant", "content": None,
                             "tool_calls": [c.model_dump() for c in calls]})
            messages.append({"role": "tool", "tool_call_id": calls[0].id,
                             "content": json.dumps({"sky": "sunny", "celsius": 18})})
            r2 = client.chat.completions.create(model="m", messages=messages, tools=TOOLS,
                                                temperature=0, max_tokens=64)
            print("3:", r2.choices[0].finish_reason, r2.choices[0].message)
            assert r2.choices[0].finish_reason == "stop", r2
            assert r2.choices[0].message.tool_calls is None, r2
            assert r2.choices[0].message.content == "It is sunny in Paris, 18 degrees.", r2

            plain = client.chat.completions.create(model="m", messages=messages[:1],
                                                   temperature=0, max_tokens=64)
            print("4:", plain.choices[0].message.content)
            assert plain.choices[0].finish_reason == "stop"
            assert plain.choices[0].message.content.startswith("<tool_call>"), plain
        finally:
            proc.terminate()
            proc.wait(timeout=30)

        proc, port = serve(fluoro, reason_model)
        try:
            client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none",
                                   max_retries=0, timeout=120)
            hello = [{"role": "user", "content": "hello"}]
            r = client.chat.completions.create(model="m", messages=hello, temperature=0)
            m = r.choices[0].message
            print("5:", m)
            assert m.content == "Hello there! How can I help?", m
            assert m.model_extra["reasoning_content"] == \
                "The user says hello; a short greeting back is enough.", m
            reasoning, content = "", ""
            for chunk in client.chat.completions.create(model="m", messages=hello, temperature=0,
                                                        stream=True):
                for c in chunk.choices:
                    extra = c.delta.model_extra or {}
                    reasoning += extra.get("reasoning_content") or ""
                    content += c.delta.content or ""
            assert reasoning == m.model_extra["reasoning_content"], reasoning
            assert content == m.content, content
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
