#!/usr/bin/env python3
"""`fluoro run --remote` against `fluoro serve` on SmolLM2: greedy, the remote answer is the
local `fluoro run` answer of the same prompt; stderr's line carries the server's token counts and
the timing seen here; --metrics reads the server's /metrics around the request (its counters
moved by exactly this request's tokens and prefix-cache hits); the API key comes from the
environment variable named by --api-key-env
(missing: the server's 401 message); a server that is gone is a clear error.

Usage: remote_run_test.py FLUORO_BINARY MODEL.gguf
Exit 77 (skip) when the model is missing, unless FLUORO_REQUIRE_MODELS=1.
"""
import os
import subprocess
import sys

from server_test_support import free_port, skip_or_fail, wait_ready


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    fluoro, model = sys.argv[1:3]
    if not os.path.exists(model):
        skip_or_fail(f"model {model} is missing (scripts/fetch-model.sh)")
    prompt = "What is the capital of France?"
    local = run([fluoro, "run", model, prompt, "-n", "16", "--temp", "0", "-t", "2", "-q"])
    assert local.returncode == 0, local.stderr
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([fluoro, "serve", model, "--port", str(port), "--api-key", "k3y",
                             "-t", "2"], stderr=subprocess.DEVNULL)
    try:
        wait_ready(proc, port, key="k3y")
        env = dict(os.environ, FLUORO_TEST_KEY="k3y")
        env.pop("OPENAI_API_KEY", None)
        remote = run([fluoro, "run", "--remote", url, "SmolLM2", prompt, "-n", "16", "--temp", "0",
                      "--api-key-env", "FLUORO_TEST_KEY"], env=env)
        print(remote.stdout, remote.stderr)
        assert remote.returncode == 0, remote.stderr
        assert remote.stdout == local.stdout, (remote.stdout, local.stdout)
        line = remote.stderr.strip().splitlines()[-1]
        assert line.startswith(f"{url}/v1 "), line
        for part in ("generated 16", "TTFT ", "16 chunks", "tok/s", "finish length"):
            assert part in line, (part, line)
        assert " prompt " in line and "cached)" in line, line

        # --metrics: the server's /metrics before and after; the counters moved by this request.
        measured = run([fluoro, "run", "--remote", url, "SmolLM2", prompt, "-n", "16", "--temp",
                        "0", "--api-key-env", "FLUORO_TEST_KEY", "--metrics"], env=env)
        assert measured.returncode == 0, measured.stderr
        stats, load = measured.stderr.strip().splitlines()[-2:]
        prompt_tokens = int(stats.split(": prompt ")[1].split()[0])
        assert load.startswith("server (vllm names): running 0, waiting 0, KV cache "), load
        assert f"tokens +{prompt_tokens} prompt +16 generated" in load, (stats, load)
        # The prompt was cached by the first request: every prompt token but the last is a hit.
        assert f"hits (+{prompt_tokens - 1}/+{prompt_tokens})" in load, (stats, load)

        # No key: the server's refusal, named.
        no_key = run([fluoro, "run", "--remote", url, "SmolLM2", prompt, "-n", "4"], env=env)
        assert no_key.returncode != 0 and "answered 401" in no_key.stderr, no_key.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    gone = run([fluoro, "run", "--remote", url, "SmolLM2", prompt, "-n", "4"])
    assert gone.returncode != 0 and "cannot connect" in gone.stderr, gone.stderr
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
