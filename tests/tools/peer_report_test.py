#!/usr/bin/env python3
"""scripts/peer/report.py on a synthetic bench-peer run of an AMX host, where llama.cpp's default
build crashes on batched evaluation and bench-peer.sh --amx-off-peer also measured a build with
AMX off: the crashed rows take the AMX-off figures for their ratio and say so, the row where the
default build ran keeps its figures, tg128 (measured with both) gets the "what AMX is worth"
table, and a run without the AMX-off engine reports as before (no marks, no table).

usage: peer_report_test.py REPORT_SCRIPT
"""
import json
import os
import subprocess
import sys
import tempfile

MODEL = "/models/m.gguf"


def bench_result(test, tps, engine):
    r = {"results": [{"test": test, "mean_tps": tps, "samples_tps": [tps]}]}
    if engine == "fluoro":
        r.update(fluoro_version="0.1.0", kernel_isa="avx512")
    else:
        r.update(llama_cpp="0.5.0-dev", llama_cpp_python="0.3.36", swa_full=True,
                 system_info="AVX512 = 1 | AMX_INT8 = 1" if engine == "llama.cpp"
                 else "AVX512 = 1")
    return r


def write_run(d, lines):
    meta = {"date": "2026-12-06 06:00 UTC", "command": "synthetic", "commit": "abc", "tree": "clean",
            "fluoro_bin": "fluoro", "note": "", "threads": 2, "runs": 2, "reps": 1,
            "flash_attn": False, "n_prompt": 512, "n_gen": 128, "depth": 4096,
            "machine": {"cpu": "Xeon", "logical_cpus": 2, "physical_cores": 2, "usable_cpus": 2,
                        "memory_gib": 16.0, "isa": "AVX-512F AMX", "caches": [],
                        "kernel_isa": "avx512"}}
    membw = {"size_mib": 1024, "runs": 7,
             "results": [{"kernel": "read", "threads": 2, "best_gbs": 30.0}]}
    info = {"architecture": "llama", "tied_output": True,
            "tensors": [{"name": "token_embd.weight", "bytes": 10_000_000, "shape": [64, 1000]}],
            "hparams": {"block_count": 2, "head_count_kv": [1, 1], "head_dim_k": 64,
                        "head_dim_v": 64, "context_length": 8192}}
    for name, obj in (("meta.json", meta), ("membw.json", membw),
                      ("info-m.gguf.json", info)):
        with open(os.path.join(d, name), "w") as f:
            json.dump(obj, f)
    with open(os.path.join(d, "runs.jsonl"), "w") as f:
        for engine, test, tps in lines:
            line = {"engine": engine, "model": MODEL, "run": 1, "loadavg": 1.0}
            if tps is None:
                line.update(failed=139, test_args="-p 512 -n 0 -d 0")
            else:
                line["result"] = bench_result(test, tps, engine)
            f.write(json.dumps(line) + "\n")


def report(script, d):
    out = subprocess.run([sys.executable, script, d], capture_output=True, text=True, check=True)
    with open(os.path.join(d, "report.json")) as f:
        return out.stdout, {r["test"]: r for r in json.load(f)["rows"]}


def main():
    script = sys.argv[1]
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    amx_off = "llama.cpp-amx-off"
    with tempfile.TemporaryDirectory() as d:
        write_run(d, [
            ("fluoro", "pp512", 1000.0), ("llama.cpp", "pp512", None), ("llama.cpp", "pp512", None),
            (amx_off, "pp512", 400.0),
            ("fluoro", "tg128", 200.0), ("llama.cpp", "tg128", 180.0), (amx_off, "tg128", 100.0),
            ("fluoro", "tg128@d4096", 90.0), ("llama.cpp", "tg128@d4096", None),
            (amx_off, "tg128@d4096", 45.0),
        ])
        md, rows = report(script, d)
        pp, tg, deep = rows["pp512"], rows["tg128"], rows["tg128@d4096"]
        check(pp["llama_cpp_build"] == "amx-off" and abs(pp["ratio"] - 2.5) < 1e-9,
              f"pp512 should take the AMX-off build's 400 tok/s: {pp}")
        check(deep["llama_cpp_build"] == "amx-off" and abs(deep["ratio"] - 2.0) < 1e-9,
              f"tg128@d4096 should take the AMX-off build's 45 tok/s: {deep}")
        check(tg["llama_cpp_build"] == "default" and abs(tg["ratio"] - 200 / 180) < 1e-9,
              f"tg128 should keep the default build's 180 tok/s: {tg}")
        check(tg.get("amx_worth") == {"amx_tps": 180.0, "amx_off_tps": 100.0},
              f"tg128 should carry both builds' decode: {tg.get('amx_worth')}")
        check("amx_worth" not in pp, "pp512 ran on one build only: no AMX-worth entry")
        check("| 400.00 (400.00–400.00) (AMX off) | 2.500 (AMX off) |" in md,
              "the pp512 row should be marked AMX off:\n" + md)
        check("| m.gguf | tg128 | 180.00 | 100.00 | 1.800 |" in md,
              "the AMX-worth table should list tg128:\n" + md)
        check("Also llama.cpp built with AMX off" in md, "the report should name the build")
        # The tg128 roofline share follows the figure the ratio used.
        check(abs(deep["roofline"]["llama_cpp_fraction"] / deep["roofline"]["fluoro_fraction"]
                  - 0.5) < 1e-9, "the roofline share should use the AMX-off figure")

    with tempfile.TemporaryDirectory() as d:
        write_run(d, [("fluoro", "tg128", 200.0), ("llama.cpp", "tg128", 100.0)])
        md, rows = report(script, d)
        check(rows["tg128"]["llama_cpp_build"] == "default" and rows["tg128"]["ratio"] == 2.0,
              f"a plain run: {rows['tg128']}")
        check("AMX off" not in md and "What AMX is worth" not in md,
              "a run without the AMX-off build should not mention it:\n" + md)

    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    if not failures:
        print("ok: 2 synthetic runs")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
