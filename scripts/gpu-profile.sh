#!/usr/bin/env bash
# Per-kernel GPU time of a few decode steps, from Nsight Compute (ncu), summed by kernel: where a
# token's time goes on the CUDA backend. Needs ncu (CUDA toolkit) and python3.
#   usage: scripts/gpu-profile.sh FLUORO-BINARY MODEL.gguf OUT-DIR [kernels to skip] [kernels]
# Skips the first kernels (load, warm-up), then records the next ones (default 3000, 700: about
# one and a half SmolLM2 decode steps). Clocks are left alone (--clock-control none).
set -uo pipefail
fluoro="${1:?usage: gpu-profile.sh FLUORO MODEL OUT-DIR [skip] [count]}"
model="${2:?model}"
out="${3:?out dir}"
skip="${4:-3000}"
count="${5:-700}"
mkdir -p "$out"
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[[ -x "$ncu" ]] || { echo "gpu-profile: ncu not found"; exit 2; }
FLUORO_DATA_DIR="$out/data" timeout 240 "$ncu" --clock-control none --csv \
    --metrics gpu__time_duration.sum --launch-skip "$skip" --launch-count "$count" \
    "$fluoro" bench "$model" -p 0 -n 16 -r 1 --backend cuda >"$out/ncu.csv" 2>"$out/ncu.err" ||
    { tail -5 "$out/ncu.err"; echo "gpu-profile: ncu failed"; exit 1; }
python3 - "$out/ncu.csv" <<'PY'
import collections, csv, sys
lines = open(sys.argv[1]).read().splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
rows = list(csv.reader(lines[start:]))
h = rows[0]
k, v, u, g = (h.index(c) for c in ("Kernel Name", "Metric Value", "Metric Unit", "Grid Size"))
scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}
tot, cnt, grid = collections.defaultdict(float), collections.Counter(), {}
for r in rows[1:]:
    if len(r) < len(h):
        continue
    name = r[k].split("(")[0].replace("(anonymous namespace)::", "").replace("unnamed>::", "")
    tot[name] += float(r[v].replace(",", "")) * scale.get(r[u], 1.0)
    cnt[name] += 1
    grid[name] = r[g]
print(f"{'total us':>9} {'n':>5} {'us each':>8}  kernel (last grid)")
for name, t in sorted(tot.items(), key=lambda x: -x[1]):
    print(f"{t:9.1f} {cnt[name]:5d} {t / cnt[name]:8.2f}  {name[:70]} {grid[name]}")
print(f"{sum(tot.values()):9.1f} {sum(cnt.values()):5d} kernels in all")
PY
