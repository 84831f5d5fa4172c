#!/usr/bin/env python3
"""Throughput against concurrency for `fluoro serve` (continuous batching) and llama.cpp's
server, on one model and thread count, in one run.

Servers, each started here, warmed with one request, then loaded by 1, 2, 4 and 8 concurrent
clients (--clients); each client sends --requests chat completions one after another (different
questions, temperature 0, max_tokens --max-tokens, not streamed):
  fluoro-pN   `fluoro serve --parallel N` for each N of --parallel (default 1 and 4; 1 is the
              one-at-a-time engine)
  llama.cpp   llama-cpp-python's OpenAI server (`python3 -m llama_cpp.server`, the version
              scripts/bench-peer.sh pins; it runs one request at a time), when importable with
              its server extras and --no-peer is not given
Reported per server and concurrency: completion tokens (the server's usage), wall time,
aggregate tokens per second, mean request latency; then each server's tok/s over
llama.cpp's at the same concurrency and fluoro-pN's over fluoro-p1's.

Usage: scripts/bench-serve.py --fluoro build/release/app/fluoro --model MODEL.gguf [-t 2]
       [--parallel 1,4] [--clients 1,2,4,8] [--requests 3] [--max-tokens 64] [--json OUT]
Needs the `openai` Python package.
"""
import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

QUESTIONS = [
    "Explain how a bicycle works.", "Describe the water cycle.", "Tell me about the Moon.",
    "Why is the sky blue?", "How do plants make food?", "What is a computer program?",
    "Describe a busy city street.", "How does a refrigerator keep food cold?",
    "What happens when you boil water?", "Tell me a story about a lighthouse keeper.",
    "Explain what a volcano is.", "How do birds fly?",
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(proc, port, timeout=180):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError("server did not answer in time")


def load(openai, port, clients, requests, max_tokens):
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none",
                           max_retries=0, timeout=600)
    tokens, latencies, errors = [0] * clients, [], []
    lock = threading.Lock()

    def worker(c):
        for r in range(requests):
            q = QUESTIONS[(c * requests + r) % len(QUESTIONS)]
            t0 = time.time()
            try:
                out = client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": q}], temperature=0,
                    max_tokens=max_tokens)
            except Exception as e:
                with lock:
                    errors.append(repr(e))
                continue
            with lock:
                latencies.append(time.time() - t0)
            tokens[c] += out.usage.completion_tokens

    threads = [threading.Thread(target=worker, args=(c,)) for c in range(clients)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - t0
    if errors:
        raise RuntimeError(f"{len(errors)} requests failed: {errors[0]}")
    total = sum(tokens)
    return {"clients": clients, "requests": clients * requests, "tokens": total,
            "wall_s": wall, "tok_s": total / wall, "latency_s": statistics.mean(latencies)}


def run_server(name, cmd, port, openai, args):
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(proc, port)
        load(openai, port, 1, 1, 8)  # warm-up
        rows = []
        for c in args.clients:
            row = load(openai, port, c, args.requests, args.max_tokens)
            row["server"] = name
            print(f"{name:10s} clients {c}: {row['tokens']:5d} tokens in {row['wall_s']:6.2f} s"
                  f" = {row['tok_s']:7.1f} tok/s, mean latency {row['latency_s']:.2f} s",
                  flush=True)
            rows.append(row)
        return rows
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fluoro", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--parallel", default="1,4")
    ap.add_argument("--clients", default="1,2,4,8")
    ap.add_argument("--requests", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    args.clients = [int(x) for x in args.clients.split(",")]
    try:
        import openai
    except ImportError:
        print("error: the openai package is missing (pip install openai)", file=sys.stderr)
        return 2
    rows = []
    for p in [int(x) for x in args.parallel.split(",")]:
        port = free_port()
        rows += run_server(f"fluoro-p{p}",
                           [args.fluoro, "serve", args.model, "--port", str(port), "--parallel",
                            str(p), "-t", str(args.threads), "-c", str(args.ctx)],
                           port, openai, args)
    peer = not args.no_peer
    if peer:
        try:
            import llama_cpp
            import llama_cpp.server.app  # noqa: F401  (the server extras)
        except ImportError as e:
            print(f"llama.cpp peer skipped: {e}", file=sys.stderr)
            peer = False
    if peer:
        port = free_port()
        rows += run_server("llama.cpp",
                           [sys.executable, "-m", "llama_cpp.server", "--model", args.model,
                            "--host", "127.0.0.1", "--port", str(port), "--n_threads",
                            str(args.threads), "--n_threads_batch", str(args.threads), "--n_ctx",
                            str(args.ctx)],
                           port, openai, args)
    by = {(r["server"], r["clients"]): r for r in rows}
    print("\nratios (tok/s):")
    for c in args.clients:
        base = by.get(("fluoro-p1", c))
        peer_row = by.get(("llama.cpp", c))
        parts = []
        for name in sorted({r["server"] for r in rows}):
            r = by[(name, c)]
            if peer_row and name != "llama.cpp":
                parts.append(f"{name}/llama.cpp {r['tok_s'] / peer_row['tok_s']:.2f}x")
            if base and name.startswith("fluoro-p") and name != "fluoro-p1":
                parts.append(f"{name}/fluoro-p1 {r['tok_s'] / base['tok_s']:.2f}x")
        print(f"  clients {c}: " + ", ".join(parts))
    if args.json:
        meta = {"host": platform.node(), "cpu": platform.processor() or platform.machine(),
                "threads": args.threads, "model": os.path.basename(args.model),
                "max_tokens": args.max_tokens, "requests_per_client": args.requests}
        if peer:
            meta["llama_cpp_python"] = llama_cpp.__version__
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
