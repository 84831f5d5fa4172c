#!/usr/bin/env python3
"""scripts/peer/llama_bench_json.py against a stand-in for llama-bench that records its arguments
and prints llama-bench's JSON records: the command passes the test's sizes, threads and
repetitions and, only with --flash-attn, `-fa on` (otherwise llama-bench's own default stays);
each pp or tg record becomes a result named as `fluoro bench` names it (pp512, tg128@d4096) with
the mean of its samples; llama-bench's combined pp+tg record is dropped; a failing llama-bench
fails the script.

usage: llama_bench_json_test.py SCRIPT
"""
import json
import os
import stat
import subprocess
import sys
import tempfile

FAKE = r'''#!/usr/bin/env python3
import json, os, sys
open(os.environ["ARGS_OUT"], "w").write(json.dumps(sys.argv[1:]))
if os.environ.get("FAIL"):
    sys.exit(3)
rec = lambda p, n, d, s: {"n_prompt": p, "n_gen": n, "n_depth": d, "samples_ts": s,
                          "flash_attn": -1, "n_batch": 2048, "n_ubatch": 512, "type_k": "f16",
                          "cpu_info": "Fake CPU", "build_commit": "unknown", "build_number": 0}
print(json.dumps([rec(512, 0, 0, [100.0, 110.0]), rec(0, 128, 4096, [20.0, 22.0, 24.0]),
                  rec(16, 16, 0, [5.0])]))
'''


def main():
    script = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        fake = os.path.join(tmp, "llama-bench")
        with open(fake, "w") as f:
            f.write(FAKE)
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IEXEC)
        args_out = os.path.join(tmp, "args.json")
        env = dict(os.environ, ARGS_OUT=args_out)
        base = ["python3", script, fake, "m.gguf", "-p", "512", "-n", "128", "-d", "4096",
                "-r", "3", "-t", "2"]
        out = json.loads(subprocess.check_output(base, env=env))
        args = json.load(open(args_out))
        for flag, value in (("-p", "512"), ("-n", "128"), ("-d", "4096"), ("-r", "3"),
                            ("-t", "2"), ("-o", "json"), ("-m", "m.gguf")):
            if flag not in args or args[args.index(flag) + 1] != value:
                failures.append(f"llama-bench got {args}, not {flag} {value}")
        if "-fa" in args:
            failures.append("-fa passed without --flash-attn (llama-bench's default must stay)")
        got = {r["test"]: r["mean_tps"] for r in out["results"]}
        if got != {"pp512": 105.0, "tg128@d4096": 22.0}:
            failures.append(f"results {got}")
        if out["flash_attn"] != -1 or out["ubatch"] != 512:
            failures.append(f"settings not carried: flash_attn {out['flash_attn']}, "
                            f"ubatch {out['ubatch']}")
        subprocess.check_output(base + ["--flash-attn"], env=env)
        args = json.load(open(args_out))
        if "-fa" not in args or args[args.index("-fa") + 1] != "on":
            failures.append(f"--flash-attn did not pass -fa on: {args}")
        rc = subprocess.run(base, env=dict(env, FAIL="1"), capture_output=True).returncode
        if rc == 0:
            failures.append("a failing llama-bench did not fail the script")
    for f in failures:
        print("FAIL:", f)
    print(f"{0 if failures else 1} passed, {1 if failures else 0} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
