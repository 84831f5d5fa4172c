#!/usr/bin/env python3
"""Summarizes a bench-peer.sh run directory: median tok/s of fluoro and llama.cpp per model and
test, their ratio, and the decode roofline (bytes read per token / measured read bandwidth).
Writes report.md and report.json into the directory and prints the Markdown.

  report.py RUN_DIR

RUN_DIR holds: meta.json (machine, versions, command), membw.json (fluoro_membw --json, before
the runs) and membw-end.json (after them; optional: the roofline uses the higher read),
info-<model>.json (fluoro info --json), runs.jsonl (one line per bench invocation:
{"engine", "model", "run", "loadavg", "result": <bench --json output>}).

Engines: "fluoro", "llama.cpp" and, on hosts where bench-peer.sh also built llama.cpp with its
AMX paths off (--amx-off-peer), "llama.cpp-amx-off": a test whose llama.cpp runs all failed takes
the AMX-off build's figures for its ratio (the row says so), and tests measured with both builds
get a table of what AMX is worth to llama.cpp.
"""
import json
import os
import statistics
import sys


AMX_OFF = "llama.cpp-amx-off"


def gemma3_global_layer(il):
    # engine/model/arch_gemma3.h is_global_layer: every 6th layer attends to the whole context,
    # the others to the last `sliding_window` tokens only.
    return il % 6 == 5


def weight_bytes_per_token(info):
    """Bytes of weights one decode step reads: every tensor, except that token_embd is only
    gathered one row per token -- unless the output head is tied to it, when it is read in full
    as the LM head."""
    total = 0
    for t in info["tensors"]:
        if t["name"] == "token_embd.weight" and not info["tied_output"]:
            total += t["bytes"] // t["shape"][-1]  # one row
        else:
            total += t["bytes"]
    return total


def kv_bytes_read(info, context):
    """K and V bytes (F16) attention reads for one token that sees `context` tokens. Sliding-
    window layers (gemma3) read at most the window."""
    hp = info["hparams"]
    window = hp.get("sliding_window", 0) or 0
    total = 0
    for il in range(hp["block_count"]):
        n_kv = hp["head_count_kv"][il]
        seen = context
        if window and info["architecture"] == "gemma3" and not gemma3_global_layer(il):
            seen = min(context, window)
        total += n_kv * (hp["head_dim_k"] + hp["head_dim_v"]) * 2 * seen
    return total


def bandwidth(membw, threads):
    """Best read-kernel GB/s at `threads` (or the closest thread count measured)."""
    reads = [r for r in membw["results"] if r["kernel"] == "read"]
    exact = [r for r in reads if r["threads"] == threads]
    pick = exact or sorted(reads, key=lambda r: abs(r["threads"] - threads))[:1]
    return pick[0]["best_gbs"], pick[0]["threads"]


def parse_test(name):
    """"tg128@d4096" -> ("tg", 128, 4096)."""
    base, _, depth = name.partition("@d")
    return base[:2], int(base[2:]), int(depth or 0)


def load(run_dir):
    with open(os.path.join(run_dir, "meta.json")) as f:
        meta = json.load(f)
    membw = []
    for name in ("membw.json", "membw-end.json"):
        path = os.path.join(run_dir, name)
        if name == "membw.json" or os.path.exists(path):
            with open(path) as f:
                membw.append(json.load(f))
    runs = []
    with open(os.path.join(run_dir, "runs.jsonl")) as f:
        for line in f:
            if line.strip():
                runs.append(json.loads(line))
    infos = {}
    for model in {r["model"] for r in runs}:
        with open(os.path.join(run_dir, "info-" + os.path.basename(model) + ".json")) as f:
            infos[model] = json.load(f)
    return meta, membw, runs, infos


def summarize(meta, membw, runs, infos):
    samples = {}  # (model, test, engine) -> [tok/s]
    versions = {}
    loads = []
    failures = []
    for r in runs:
        loads.append(r.get("loadavg", 0.0))
        if "failed" in r:
            failures.append({k: r.get(k) for k in ("engine", "model", "run", "failed",
                                                     "test_args")})
            continue
        if r["engine"] == "llama.cpp":
            versions["llama_cpp"] = r["result"].get("llama_cpp")
            versions["llama_cpp_python"] = r["result"].get("llama_cpp_python")
            versions["llama_cpp_system_info"] = r["result"].get("system_info")
            versions["swa_full"] = r["result"].get("swa_full")
            versions["llama_bench_command"] = r["result"].get("command")
            versions["llama_bench_flash_attn"] = r["result"].get("flash_attn")
            versions["llama_bench_ubatch"] = r["result"].get("ubatch")
            versions["llama_bench_batch"] = r["result"].get("batch")
        elif r["engine"] == AMX_OFF:
            versions["llama_cpp_amx_off_system_info"] = r["result"].get("system_info")
            versions.setdefault("llama_cpp", r["result"].get("llama_cpp"))
            versions.setdefault("llama_cpp_python", r["result"].get("llama_cpp_python"))
            versions.setdefault("swa_full", r["result"].get("swa_full"))
        else:
            versions["fluoro"] = r["result"].get("fluoro_version")
            versions["kernel_isa"] = r["result"].get("kernel_isa")
        for res in r["result"]["results"]:
            key = (r["model"], res["test"], r["engine"])
            samples.setdefault(key, []).extend(res["samples_tps"])
    threads = meta["threads"]
    bw_gbs, bw_threads = max(bandwidth(m, threads) for m in membw)
    rows = []
    for model in sorted({k[0] for k in samples}, key=lambda m: [r["model"] for r in runs].index(m)):
        tests = [k[1] for k in samples if k[0] == model]
        for test in dict.fromkeys(tests):
            ours = samples.get((model, test, "fluoro"), [])
            amx = samples.get((model, test, "llama.cpp"), [])
            amx_off = samples.get((model, test, AMX_OFF), [])
            # The default (AMX) build where it ran; the AMX-off build where it did not.
            theirs = amx or amx_off
            row = {"model": os.path.basename(model), "test": test,
                   "fluoro_tps": statistics.median(ours) if ours else None,
                   "llama_cpp_tps": statistics.median(theirs) if theirs else None,
                   "fluoro_samples": ours, "llama_cpp_samples": theirs,
                   "llama_cpp_build": "default" if amx or not amx_off else "amx-off"}
            if amx and amx_off:
                row["amx_worth"] = {"amx_tps": statistics.median(amx),
                                    "amx_off_tps": statistics.median(amx_off)}
            if ours and theirs:
                row["ratio"] = row["fluoro_tps"] / row["llama_cpp_tps"]
            kind, n, depth = parse_test(test)
            if kind == "tg":
                info = infos[model]
                context = depth + (n + 1) / 2  # mean tokens attended over the timed steps
                weights = weight_bytes_per_token(info)
                kv = kv_bytes_read(info, context)
                floor_s = (weights + kv) / (bw_gbs * 1e9)
                row["roofline"] = {
                    "weight_bytes": weights, "kv_bytes": round(kv), "mean_context": context,
                    "bytes_per_token": round(weights + kv), "floor_ms": floor_s * 1e3,
                    "max_tps": 1 / floor_s,
                    "fluoro_fraction": row["fluoro_tps"] * floor_s if ours else None,
                    "llama_cpp_fraction": row["llama_cpp_tps"] * floor_s if theirs else None}
            rows.append(row)
    return {"meta": meta, "versions": versions, "membw": membw,
            "bandwidth_gbs": bw_gbs, "bandwidth_threads": bw_threads,
            "loadavg_mean": statistics.mean(loads) if loads else None,
            "loadavg_max": max(loads) if loads else None, "failures": failures, "rows": rows}


def fmt(x, digits=2):
    return "—" if x is None else f"{x:.{digits}f}"


def spread(s):
    return f"{min(s):.2f}–{max(s):.2f}" if s else "—"


def markdown(rep):
    m, v = rep["meta"], rep["versions"]
    out = []
    out.append(f"#### {m['date']} · {m['machine']['cpu']} · {m['threads']} thread(s)\n")
    out.append(f"- Command: `{m['command']}`")
    out.append(f"- Machine: {m['machine']['cpu']}, {m['machine']['logical_cpus']} logical / "
               f"{m['machine']['physical_cores']} physical cores, "
               f"{m['machine']['memory_gib']:.1f} GiB RAM, ISA: {m['machine']['isa']}; "
               f"shared and noisy: load average during the runs {fmt(rep['loadavg_mean'], 1)} "
               f"mean, {fmt(rep['loadavg_max'], 1)} max (1-min, sampled before each run)")
    out.append(f"- fluoro {v.get('fluoro', '?')} at commit {m['commit']}"
               + (f" ({m['tree']})" if m.get("tree") else "")
               + f", kernel path {v.get('kernel_isa', '?')}, binary {m['fluoro_bin']}")
    if m.get("note"):
        out.append(f"- Note: {m['note']}")
    if m.get("peer") == "llama-bench":
        fa = v.get("llama_bench_flash_attn")
        out.append(f"- llama.cpp's own llama-bench, built from the pinned llama-cpp-python "
                   f"source (scripts/build-llama-tools.sh) for this CPU, at its defaults: flash "
                   f"attention {'auto' if fa in (-1, None) else 'on' if fa in (1, True) else 'off'}"
                   f", batch {v.get('llama_bench_batch', '?')} / ubatch "
                   f"{v.get('llama_bench_ubatch', '?')}; its command: "
                   f"`{v.get('llama_bench_command', '?')}`")
    else:
        out.append(f"- llama.cpp {v.get('llama_cpp', '?')} via llama-cpp-python "
                   f"{v.get('llama_cpp_python', '?')} (built from source on this machine: "
                   f"{v.get('llama_cpp_system_info', '?')}), flash attention "
                   f"{'on' if m.get('flash_attn') else 'off'}, swa_full={v.get('swa_full')}")
    out.append(f"- Method: both engines KV F16, batch 512, random tokens; pp from an empty cache "
               f"(or at depth), tg single-token steps; each run is a fresh process with one "
               f"warm-up and {m['reps']} timed repetition(s); {m['runs']} runs per engine and "
               f"test, alternating fluoro / llama.cpp; median tok/s (min–max over runs)")
    if v.get("llama_cpp_amx_off_system_info"):
        out.append(f"- Also llama.cpp built with AMX off (-mno-amx-*: "
                   f"{v['llama_cpp_amx_off_system_info']}): its figures stand in the rows marked "
                   f"\"AMX off\", where every run of the default build failed")
    if rep["failures"]:
        out.append("- Failed runs (exit status; 124 = killed at the time limit), each tried once "
                   "more: " + "; ".join(
                       f"{f['engine']} {os.path.basename(f['model'])} {f['test_args']} run "
                       f"{f['run']} ({f['failed']})" for f in rep["failures"]))
    if rep.get("skipped"):
        out.append("- Not run (past the model's trained context): " + "; ".join(rep["skipped"]))
    out.append("")
    out.append("| model | test | fluoro tok/s | llama.cpp tok/s | fluoro / llama.cpp |")
    out.append("| --- | --- | --- | --- | --- |")
    for r in rep["rows"]:
        off = " (AMX off)" if r.get("llama_cpp_build") == "amx-off" else ""
        out.append(f"| {r['model']} | {r['test']} | {fmt(r['fluoro_tps'])} "
                   f"({spread(r['fluoro_samples'])}) | {fmt(r['llama_cpp_tps'])} "
                   f"({spread(r['llama_cpp_samples'])}){off} | {fmt(r.get('ratio'), 3)}{off} |")
    out.append("")
    worth = [r for r in rep["rows"] if r.get("amx_worth")]
    if worth:
        out.append("What AMX is worth to llama.cpp (the same test with both builds):")
        out.append("")
        out.append("| model | test | llama.cpp tok/s | AMX off tok/s | AMX / AMX off |")
        out.append("| --- | --- | --- | --- | --- |")
        for r in worth:
            w = r["amx_worth"]
            out.append(f"| {r['model']} | {r['test']} | {fmt(w['amx_tps'])} | "
                       f"{fmt(w['amx_off_tps'])} | {fmt(w['amx_tps'] / w['amx_off_tps'], 3)} |")
        out.append("")
    for when, mb in zip(("before the runs", "after them"), rep["membw"]):
        # The bandwidth kernels (the compute peaks, fma and int8, report best_gops instead).
        bw = {(r["kernel"], r["threads"]): r["best_gbs"] for r in mb["results"] if "best_gbs" in r}
        parts = [f"{k} {t} thread(s) {g:.1f} GB/s" for (k, t), g in bw.items()]
        out.append(f"Memory bandwidth {when} (fluoro_membw, {mb['size_mib']} MiB arrays, best of "
                   f"{mb['runs']}): " + "; ".join(parts) + ".")
    out.append(f"Roofline uses the higher read at {rep['bandwidth_threads']} thread(s) = "
               f"{rep['bandwidth_gbs']:.2f} GB/s.")
    out.append("")
    out.append("| model | test | bytes / token (weights + KV) | floor ms / token | roofline tok/s "
               "| fluoro | llama.cpp |")
    out.append("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rep["rows"]:
        rf = r.get("roofline")
        if not rf:
            continue
        mib = 1024 * 1024
        out.append(
            f"| {r['model']} | {r['test']} | {rf['bytes_per_token'] / mib:.1f} MiB "
            f"({rf['weight_bytes'] / mib:.1f} + {rf['kv_bytes'] / mib:.2f}) | "
            f"{rf['floor_ms']:.2f} | {rf['max_tps']:.1f} | "
            f"{fmt(r['fluoro_tps'])} = {fmt(100 * (rf['fluoro_fraction'] or 0), 1)}% | "
            f"{fmt(r['llama_cpp_tps'])} = {fmt(100 * (rf['llama_cpp_fraction'] or 0), 1)}% |")
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    run_dir = sys.argv[1]
    rep = summarize(*load(run_dir))
    skipped = os.path.join(run_dir, "skipped.txt")  # written by bench-peer.sh --depths
    if os.path.exists(skipped):
        rep["skipped"] = [line.strip() for line in open(skipped) if line.strip()]
    md = markdown(rep)
    with open(os.path.join(run_dir, "report.json"), "w") as f:
        json.dump(rep, f, indent=2)
    with open(os.path.join(run_dir, "report.md"), "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
