#!/usr/bin/env python3
"""`fluoro eval fidelity` on both default models, end to end: the float64 reference of the
committed token windows is made here (tests/reference/fidelity_reference.py), the engine is
measured against it, and

  * the reference perplexity the tool recomputes through the file's LM head from the stored
    hidden states equals the one the fixture's script computed in numpy over the same 2040
    positions, to float64 rounding (relative 1e-9: both sum the same float64 products, in
    different orders, over 2040 log-sum-exps) - every row of the head path, not just the check;
  * fluoro is no further from the reference than llama.cpp (the fixture holds llama.cpp's KL
    divergence at each of the same 2040 positions): the mean of the paired differences
    KL_fluoro - KL_llama.cpp must not exceed twice its standard error. Both engines round
    activations to 8 bits, and which rounding error lands where differs between nominally equal
    paths (our AVX2 and AVX-512 kernels differ by ~8 % in mean KLD on SmolLM2, in either
    direction per window), so equal means are the claim and 2 SE (one-sided, ~98 % under a normal
    approximation) is what 2040 positions can resolve; a change that makes the arithmetic
    really less exact (an f16 activation, a coarser KV) moves the mean by many SE;
  * a KV cache stored at 4 bits (q4_0) moves SmolLM2 further from the reference than the default
    f16 one: the measurement sees a known loss of precision; and with the matmuls' activations
    kept in float (FLUORO_CPU_F32_ACTIVATIONS=1) SmolLM2 is 100 times closer: the 8-bit
    activations are the distance;
  * a reference made for the other model is refused with the file named;
  * a user's own path (--make-windows, the reference, the measurement) runs on a tiny committed
    model, where float activations and an f32 KV leave only float32 rounding.

usage: fidelity_test.py FLUORO_BIN PROJECT_DIR
Exit 77 (skip) when a model is missing, unless FLUORO_REQUIRE_MODELS=1.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

MODELS = {"smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf", "gemma3": "gemma-3-270m-q4_k_m.gguf"}


def paired(a, b):
    """Mean of the paired differences a_i - b_i and its standard error."""
    diff = [x - y for x, y in zip(a, b)]
    n = len(diff)
    mean = sum(diff) / n
    return mean, math.sqrt(sum((d - mean) ** 2 for d in diff) / (n - 1) / n)


def measure(fluoro, model, ref, *extra, env=None):
    out = subprocess.run([fluoro, "eval", "fidelity", model, "--reference", ref, "--json",
                          "--per-position", "-t", "2", *extra], capture_output=True, text=True,
                         env=dict(os.environ, **(env or {})))
    if out.returncode != 0:
        raise SystemExit(f"FAIL: fluoro eval fidelity {model}: {out.stderr}")
    return json.loads(out.stdout)


def user_path(fluoro, root, make_ref):
    """What a user does with their own file and text, on a tiny committed model (llama3 layout,
    F16/F32/Q8_0 weights): --make-windows, the reference, the measurement. With the matmuls in
    float and an f32 KV the engine does the reference's arithmetic in float32: the KL divergence
    is float rounding, ~(1e-6 logit)^2, so 1e-6 nats is four orders above it and any wrong op
    (~1e-3 and up) far below it fails."""
    model = os.path.join(root, "tests", "reference", "fixtures", "arch_llama3.gguf")
    text = os.path.join(root, "tests", "reference", "data", "kjv_genesis.txt")
    failures = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as tmp:
        windows, ref = os.path.join(tmp, "w.json"), os.path.join(tmp, "w.fref")
        subprocess.run([fluoro, "eval", "fidelity", model, "--make-windows", text, "-c", "64",
                        "--windows", "3", "-o", windows], check=True, capture_output=True)
        subprocess.run([sys.executable, make_ref, model, windows, ref], check=True,
                       capture_output=True)
        quantized = measure(fluoro, model, ref)
        exact = measure(fluoro, model, ref, "--kv-type", "f32",
                        env={"FLUORO_CPU_F32_ACTIVATIONS": "1"})
        print(f"arch_llama3: 8-bit activations {quantized['fluoro']['kld_mean']:.3g} nats, "
              f"float activations + f32 KV {exact['fluoro']['kld_mean']:.3g}")
        if quantized["tokens"] != 3 * 31 or "llama.cpp" in quantized:
            failures.append(f"arch_llama3: {quantized['tokens']} positions (3 x 31 expected)")
        if not exact["fluoro"]["kld_mean"] < 1e-6 < quantized["fluoro"]["kld_mean"]:
            failures.append(f"arch_llama3: float path {exact['fluoro']['kld_mean']:.3g} nats, "
                            f"8-bit {quantized['fluoro']['kld_mean']:.3g}")
    return failures


def main():
    fluoro, root = sys.argv[1:3]
    models_dir = os.path.join(root, "models")
    fixtures = os.path.join(root, "tests", "reference", "fixtures")
    make_ref = os.path.join(root, "tests", "reference", "fidelity_reference.py")
    failures = user_path(fluoro, root, make_ref)
    for file in MODELS.values():
        if not os.path.exists(os.path.join(models_dir, file)):
            if os.environ.get("FLUORO_REQUIRE_MODELS") == "1":
                print(f"FAIL: missing {file} (FLUORO_REQUIRE_MODELS=1)", file=sys.stderr)
                return 1
            print(f"SKIP: missing {file}")
            return 77
    with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as tmp:
        refs = {}
        for name, file in MODELS.items():
            refs[name] = os.path.join(tmp, f"{name}.fref")
            subprocess.run([sys.executable, make_ref, os.path.join(models_dir, file),
                            os.path.join(fixtures, f"fidelity_{name}.json"), refs[name]],
                           check=True)
        for name, file in MODELS.items():
            with open(os.path.join(fixtures, f"fidelity_{name}.json")) as f:
                fixture = json.load(f)
            model = os.path.join(models_dir, file)
            r = measure(fluoro, model, refs[name])
            ours, peer = r["fluoro"], r["llama.cpp"]
            brief = {k: v for k, v in ours.items() if k != "kld"}
            print(f"{name}: fluoro {json.dumps(brief)}")
            print(f"{name}: llama.cpp {json.dumps({k: v for k, v in peer.items() if k != 'kld'})}")
            if r["tokens"] != fixture["scored"]:
                failures.append(f"{name}: {r['tokens']} positions, fixture {fixture['scored']}")
            want = fixture["reference"]["ppl"]
            if abs(r["reference"]["ppl"] - want) > 1e-9 * want:
                failures.append(f"{name}: reference ppl {r['reference']['ppl']!r} recomputed, "
                                f"{want!r} in numpy")
            n = len(fixture["llama.cpp"]["kld"])
            mean, se = paired(ours["kld"], fixture["llama.cpp"]["kld"])
            print(f"{name}: paired KL difference fluoro - llama.cpp {mean:+.6f} "
                  f"(standard error {se:.6f}, {mean / se:+.2f} SE)")
            if n != len(ours["kld"]) or mean > 2 * se:
                failures.append(f"{name}: fluoro's KL divergence exceeds llama.cpp's by "
                                f"{mean:.6f} = {mean / se:.2f} standard errors")
            if name == "smollm2":
                q4 = measure(fluoro, model, refs[name], "--kv-type", "q4_0")["fluoro"]
                mean, se = paired(q4["kld"], ours["kld"])
                print(f"{name}: q4_0 KV - f16 KV {mean:+.6f} ({mean / se:+.2f} SE)")
                if not mean > 2 * se:
                    failures.append(f"{name}: q4_0 KV is not further from the reference than "
                                    f"f16 by 2 SE ({mean:.6f}, SE {se:.6f})")
                # The FLUORO_CPU_F32_ACTIVATIONS diagnostic (matmuls in float, no 8-bit
                # activations): what remains is the f16 KV and float rounding, measured 2e-6 nats
                # against the 8-bit path's 5e-3, so even 1 % of the latter means the diagnostic
                # (or the claim that the 8-bit activations are the distance) is broken.
                exact = measure(fluoro, model, refs[name], env={"FLUORO_CPU_F32_ACTIVATIONS": "1"})
                exact = exact["fluoro"]["kld_mean"]
                print(f"{name}: float activations {exact:.3g} nats (8-bit {ours['kld_mean']:.3g})")
                if not exact < 0.01 * ours["kld_mean"]:
                    failures.append(f"{name}: float activations {exact:.6f} nats, not below 1 % "
                                    f"of the 8-bit path's {ours['kld_mean']:.6f}")
        wrong = subprocess.run([fluoro, "eval", "fidelity",
                                os.path.join(models_dir, MODELS["smollm2"]), "--reference",
                                refs["gemma3"]], capture_output=True, text=True)
        if wrong.returncode == 0 or refs["gemma3"] not in wrong.stderr \
                or "was made for" not in wrong.stderr:
            failures.append(f"Gemma 3's reference on SmolLM2: exit {wrong.returncode}, "
                            f"{wrong.stderr.strip()!r}")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
