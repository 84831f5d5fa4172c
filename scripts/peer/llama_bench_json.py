#!/usr/bin/env python3
"""llama.cpp's pp/tg throughput from its own llama-bench (scripts/build-llama-tools.sh builds it
from the pinned source), run as its users run it: its defaults (flash attention `auto`, batch
2048, ubatch 512, F16 KV cache) unless --flash-attn asks for `on`. Prints JSON shaped like
`fluoro bench --json` and scripts/peer/llamacpp_bench.py, for scripts/bench-peer.sh --peer
llama-bench.
  usage: llama_bench_json.py LLAMA_BENCH MODEL [-p N] [-n N] [-d D] [-r R] [-t T] [--flash-attn]
"""
import argparse
import json
import statistics
import subprocess
import sys


def test_name(kind, n, depth):
    return f"{kind}{n}" + (f"@d{depth}" if depth > 0 else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("llama_bench")
    ap.add_argument("model")
    ap.add_argument("-p", "--n-prompt", type=int, default=512)
    ap.add_argument("-n", "--n-gen", type=int, default=128)
    ap.add_argument("-d", "--depth", type=int, default=0)
    ap.add_argument("-r", "--repetitions", type=int, default=5)
    ap.add_argument("-t", "--threads", type=int, required=True)
    ap.add_argument("--flash-attn", action="store_true")
    a = ap.parse_args()
    cmd = [a.llama_bench, "-m", a.model, "-p", str(a.n_prompt), "-n", str(a.n_gen),
           "-d", str(a.depth), "-r", str(a.repetitions), "-t", str(a.threads), "-o", "json"]
    if a.flash_attn:
        cmd += ["-fa", "on"]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.stderr.write(run.stderr[-2000:])
        sys.exit(f"llama_bench_json: llama-bench exited {run.returncode}")
    records = json.loads(run.stdout)
    results = []
    for r in records:
        n_p, n_g = int(r["n_prompt"]), int(r["n_gen"])
        if n_p > 0 and n_g > 0:
            continue  # llama-bench's pp+tg test; not asked for here
        kind, n = ("pp", n_p) if n_p > 0 else ("tg", n_g)
        samples = [float(s) for s in r["samples_ts"]]
        results.append({
            "test": test_name(kind, n, int(r.get("n_depth", 0))), "tokens": n,
            "depth": int(r.get("n_depth", 0)), "mean_tps": statistics.fmean(samples),
            "sd_tps": statistics.stdev(samples) if len(samples) > 1 else 0.0,
            "samples_tps": samples})
    first = records[0] if records else {}
    print(json.dumps({
        "model": a.model, "threads": a.threads, "backend": "llama.cpp llama-bench (cpu)",
        "llama_cpp": f"{first.get('build_commit', '?')} ({first.get('build_number', '?')})",
        "system_info": first.get("cpu_info", ""), "batch": first.get("n_batch"),
        "ubatch": first.get("n_ubatch"), "flash_attn": first.get("flash_attn"),
        "kv_type": first.get("type_k", "f16"), "command": " ".join(cmd), "results": results,
    }, indent=2))


if __name__ == "__main__":
    main()
