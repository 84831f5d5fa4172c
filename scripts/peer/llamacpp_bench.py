#!/usr/bin/env python3
"""llama.cpp's pp/tg throughput through llama-cpp-python's low-level API, measured the way
`fluoro bench` (engine/eval/bench.cpp) and llama-bench measure it, so the two are comparable:

  pp<N>:  N random tokens decoded in n_batch (= n_ubatch) pieces into the cache;
  tg<N>:  N single-token decode steps, each followed by llama_synchronize;
  @d<D>:  D random tokens prefilled first (untimed, once); every run starts from exactly those D
          (positions >= D are removed from the cache before each run).

One untimed warm-up run, then --repetitions timed ones. Only the llama_decode/llama_synchronize
calls are timed (tokens are drawn beforehand). The cache is cleared between tests. Flash attention
is off unless --flash-attn; KV cache F16 (the library default, as ours). Prints JSON shaped like
`fluoro bench --json`.
"""
import argparse
import ctypes
import json
import os
import random
import sys
import time

import llama_cpp as L


def _quiet_logs():
    @ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
    def _drop(level, text, user_data):  # noqa: ARG001 - the library's log callback signature
        pass

    L.llama_log_set(_drop, ctypes.c_void_p())
    return _drop  # keep the callback alive


class Bench:
    def __init__(self, model_path, n_ctx, n_batch, threads, flash_attn):
        L.llama_backend_init()
        mparams = L.llama_model_default_params()
        mparams.n_gpu_layers = 0
        self.model = L.llama_model_load_from_file(model_path.encode(), mparams)
        if not self.model:
            sys.exit(f"llamacpp_bench: cannot load {model_path}")
        cparams = L.llama_context_default_params()
        cparams.n_ctx = n_ctx
        cparams.n_batch = n_batch
        cparams.n_ubatch = n_batch
        cparams.n_seq_max = 1
        cparams.n_threads = threads
        cparams.n_threads_batch = threads
        cparams.flash_attn_type = (L.LLAMA_FLASH_ATTN_TYPE_ENABLED if flash_attn
                                   else L.LLAMA_FLASH_ATTN_TYPE_DISABLED)
        cparams.no_perf = True
        self.swa_full = bool(cparams.swa_full)
        self.ctx = L.llama_init_from_model(self.model, cparams)
        if not self.ctx:
            sys.exit(f"llamacpp_bench: cannot create a context of {n_ctx} tokens")
        self.mem = L.llama_get_memory(self.ctx)
        self.n_batch = n_batch
        self.n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(self.model))

    def close(self):
        L.llama_free(self.ctx)
        L.llama_model_free(self.model)

    def random_tokens(self, n, rng):
        return [rng.randrange(self.n_vocab) for _ in range(n)]

    def _decode(self, tokens):
        arr = (L.llama_token * len(tokens))(*tokens)
        rc = L.llama_decode(self.ctx, L.llama_batch_get_one(arr, len(tokens)))
        if rc != 0:
            sys.exit(f"llamacpp_bench: llama_decode returned {rc}")

    def cut_to(self, depth):
        """The cache holds positions [0, depth) again; returns False when it cannot."""
        if depth == 0:
            L.llama_memory_clear(self.mem, False)
            return True
        return bool(L.llama_memory_seq_rm(self.mem, 0, depth, -1))

    def prefill(self, tokens):
        for b in range(0, len(tokens), self.n_batch):
            self._decode(tokens[b:b + self.n_batch])
        L.llama_synchronize(self.ctx)

    def run_pp(self, tokens):
        t0 = time.perf_counter_ns()
        for b in range(0, len(tokens), self.n_batch):
            self._decode(tokens[b:b + self.n_batch])
        L.llama_synchronize(self.ctx)
        return (time.perf_counter_ns() - t0) / 1e9

    def run_tg(self, tokens):
        arrays = [(L.llama_token * 1)(t) for t in tokens]
        batches = [L.llama_batch_get_one(a, 1) for a in arrays]
        total = 0
        for batch in batches:
            t0 = time.perf_counter_ns()
            rc = L.llama_decode(self.ctx, batch)
            L.llama_synchronize(self.ctx)
            total += time.perf_counter_ns() - t0
            if rc != 0:
                sys.exit(f"llamacpp_bench: llama_decode returned {rc}")
        return total / 1e9


def measure(bench, name, kind, tokens, depth, depth_tokens, reps):
    run = bench.run_pp if kind == "pp" else bench.run_tg
    samples = []
    for i in range(reps + 1):  # run 0 is the warm-up
        if not bench.cut_to(depth):  # a cache that cannot drop a suffix: rebuild the depth
            L.llama_memory_clear(bench.mem, False)
            bench.prefill(depth_tokens)
        seconds = run(tokens)
        if i > 0:
            samples.append(len(tokens) / seconds)
    mean = sum(samples) / len(samples)
    sd = (sum((s - mean) ** 2 for s in samples) / (len(samples) - 1)) ** 0.5 if reps > 1 else 0.0
    return {"test": name, "tokens": len(tokens), "depth": depth, "mean_tps": mean, "sd_tps": sd,
            "samples_tps": samples}


def test_name(kind, n, depth):
    return f"{kind}{n}" + (f"@d{depth}" if depth > 0 else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("-p", "--n-prompt", type=int, default=512)
    ap.add_argument("-n", "--n-gen", type=int, default=128)
    ap.add_argument("-d", "--depth", type=int, default=0)
    ap.add_argument("-r", "--repetitions", type=int, default=5)
    ap.add_argument("-t", "--threads", type=int, default=os.cpu_count())
    ap.add_argument("-b", "--batch", type=int, default=512)
    ap.add_argument("--flash-attn", action="store_true")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    if args.repetitions < 1:
        sys.exit("llamacpp_bench: repetitions must be at least 1")

    keep = _quiet_logs()
    n_ctx = args.depth + max(args.n_prompt, args.n_gen, 1)
    bench = Bench(args.model, n_ctx, args.batch, args.threads, args.flash_attn)
    rng = random.Random(args.seed)
    depth_tokens = bench.random_tokens(args.depth, rng)
    results = []
    L.llama_memory_clear(bench.mem, False)
    if args.depth > 0 and (args.n_prompt > 0 or args.n_gen > 0):
        bench.prefill(depth_tokens)  # untimed, once
    for kind, n in (("pp", args.n_prompt), ("tg", args.n_gen)):
        if n > 0:
            results.append(measure(bench, test_name(kind, n, args.depth), kind,
                                   bench.random_tokens(n, rng), args.depth, depth_tokens,
                                   args.repetitions))
    out = {
        "model": args.model,
        "threads": args.threads,
        "backend": "llama.cpp (cpu)",
        "llama_cpp_python": L.__version__,
        "llama_cpp": L.llama_version().decode(),
        "system_info": L.llama_print_system_info().decode().strip(),
        "batch": args.batch,
        "flash_attn": args.flash_attn,
        "swa_full": bench.swa_full,
        "kv_type": "f16",
        "results": results,
    }
    bench.close()
    del keep
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
