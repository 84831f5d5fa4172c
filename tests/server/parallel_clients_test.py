#!/usr/bin/env python3
"""`fluoro serve --parallel 4` with 8 concurrent `openai` clients on SmolLM2 (continuous
batching): every client gets exactly the greedy answer its request gets alone (asked one at a
time first, on the same server: the batch is computed by batch-invariant kernels, so the answers
and their logprobs are equal, not close), no request is lost (8 answers, 8 successes in
/metrics), the batch really ran (vllm:num_requests_running reached 2 or more while they ran),
and a streaming client that goes away after a few tokens has its sequence cancelled (the log
says stop=cancelled) while the others finish. Prints the aggregate tokens per second of the
concurrent round and of the same requests one at a time (measured, not asserted: CI hosts
vary; docs/PERFORMANCE.md has the benchmark).

Usage: parallel_clients_test.py FLUORO_BINARY MODEL.gguf
Exit 77 (skip) when the model or the openai package is missing, unless FLUORO_REQUIRE_MODELS=1.
"""
import subprocess
import sys
import threading
import time
import urllib.request

from server_test_support import binary_model_openai, free_port, stop_server, wait_ready

QUESTIONS = [
    "What is the capital of France?",
    "Name three fruits.",
    "Write a haiku about rain.",
    "Count from one to five.",
    "Say hello in French.",
    "What colour is the sky?",
    "Give me a word that rhymes with cat.",
    "What is two plus two?",
]
MAX_TOKENS = 32


def metric(port, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


def main():
    args = binary_model_openai(__doc__)
    if args is None:
        return 2
    fluoro, model, openai = args
    port = free_port()
    log = []
    proc = subprocess.Popen([fluoro, "serve", model, "--port", str(port), "--parallel", "4",
                             "--prefill-chunk", "64", "-t", "2"],
                            stderr=subprocess.PIPE, text=True)
    reader = threading.Thread(target=lambda: log.extend(iter(proc.stderr.readline, "")),
                              daemon=True)
    reader.start()
    try:
        wait_ready(proc, port)
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none",
                               max_retries=0, timeout=300)

        def ask(q):
            r = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": q}], temperature=0,
                max_tokens=MAX_TOKENS, logprobs=True)
            lp = [t.logprob for t in r.choices[0].logprobs.content]
            return r.choices[0].message.content, lp, r.usage.completion_tokens

        t0 = time.time()
        alone = [ask(q) for q in QUESTIONS]
        t_alone = time.time() - t0
        tokens = sum(a[2] for a in alone)

        running_seen = [0.0]
        stop_watch = threading.Event()

        def watch():
            while not stop_watch.is_set():
                running_seen[0] = max(running_seen[0], metric(port, "vllm:num_requests_running"))
                time.sleep(0.02)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        results = [None] * len(QUESTIONS)
        errors = []

        def worker(i):
            try:
                results[i] = ask(QUESTIONS[i])
            except Exception as e:  # reported below: a lost request fails the test
                errors.append(f"{i}: {e!r}")

        t0 = time.time()
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(QUESTIONS))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        t_batch = time.time() - t0
        stop_watch.set()
        watcher.join()
        assert not errors, errors
        for i, (got, want) in enumerate(zip(results, alone)):
            assert got[0] == want[0], (i, got[0], want[0])
            assert got[1] == want[1], (i, "logprobs differ", got[1], want[1])
        assert running_seen[0] >= 2, f"never more than {running_seen[0]} running at once"
        print(f"{len(QUESTIONS)} requests, {tokens} tokens: one at a time {t_alone:.2f} s "
              f"({tokens / t_alone:.1f} tok/s), 8 clients on --parallel 4 {t_batch:.2f} s "
              f"({tokens / t_batch:.1f} tok/s); most running at once {running_seen[0]:.0f}")

        # A streaming client that leaves after 3 chunks, beside two that stay.
        stayers = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
        for t in stayers:
            t.start()
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Tell me a long story."}],
            temperature=0, max_tokens=400, stream=True)
        for n, _ in enumerate(stream):
            if n == 3:
                break
        stream.close()
        for t in stayers:
            t.join()
        assert not errors, errors
        assert results[0] == alone[0] and results[1] == alone[1]
        deadline = time.time() + 60
        while time.time() < deadline and not any("stop=cancelled" in l for l in log):
            time.sleep(0.1)
        assert any("stop=cancelled" in l for l in log), "".join(log[-20:])
        successes = metric(port, "vllm:request_success_total")
        # 8 alone + 8 together + 2 stayers, and the cancelled one counted as an abort.
        assert successes == 2 * len(QUESTIONS) + 2 + 1, successes
        # The server still answers.
        assert ask(QUESTIONS[0])[0] == alone[0][0]
        print("parallel clients: OK")
        return 0
    finally:
        stop_server(proc)


if __name__ == "__main__":
    sys.exit(main())
