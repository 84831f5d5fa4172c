#!/usr/bin/env bash
# Multi-head latent attention, absorbed against naive, at a long context: decode per token with the
# KV cache holding --ctx tokens, on a deepseek2 file with DeepSeek-V2-Lite's attention shapes and
# random weights (scripts/make_mla_bench_model.py; each path on the GGUF form it reads its
# matrices from without transposing: absorbed on attn_k_b / attn_v_b, naive on attn_kv_b). Prints
# per path the decode step, the attention ops' time and bytes per token (fluoro profile), and the
# KV bytes per token, then the ratios. Needs a release build and the `gguf` Python package.
#   scripts/bench-mla.sh [--ctx N] [--decode N] [--layers N] [--threads N]
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

ctx=4096 decode=32 layers=4 threads=
while [ $# -gt 0 ]; do
    case "$1" in
        --ctx) ctx=$2; shift 2 ;;
        --decode) decode=$2; shift 2 ;;
        --layers) layers=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
        *) die "unknown option '$1' (see --help)" ;;
    esac
done
fluoro="$FLUORO_ROOT/build/release/app/fluoro"
[ -x "$fluoro" ] || die "no $fluoro: build the release preset first"
dir="$FLUORO_ROOT/build/bench-mla"
mkdir -p "$dir"
for form in mla legacy; do
    f="$dir/mla-bench-$form-$layers.gguf"
    [ -f "$f" ] || python3 "$FLUORO_ROOT/scripts/make_mla_bench_model.py" "$f" --layers "$layers" \
        --form "$form"
done
prompt=$((ctx - decode - 1))
run() {  # path form
    "$fluoro" profile "$dir/mla-bench-$2-$layers.gguf" --mla "$1" --prompt-tokens "$prompt" \
        --decode-tokens "$decode" ${threads:+-t "$threads"} --bandwidth 1 --json \
        > "$dir/profile-$1.json"
}
run absorbed mla
run naive legacy
python3 - "$dir" "$ctx" <<'EOF'
import json, sys
d, ctx = sys.argv[1], int(sys.argv[2])
rows = {}
for path in ("absorbed", "naive"):
    p = json.load(open(f"{d}/profile-{path}.json"))["decode"]
    attn = [o for o in p["ops"] if o["category"] == "attention"]
    rows[path] = dict(
        step=p["ms_per_token"],
        attn_ms=sum(o["ms_per_token"] for o in attn),
        attn_mib=sum(o["mib_per_token"] for o in attn),
        ops=", ".join(f'{o["op"]} {o["ms_per_token"]:.2f} ms' for o in attn))
    print(f"{path:9s} decode {rows[path]['step']:.2f} ms/token; attention ops "
          f"{rows[path]['attn_ms']:.2f} ms, {rows[path]['attn_mib']:.1f} MiB/token ({rows[path]['ops']})")
a, n = rows["absorbed"], rows["naive"]
print(f"naive / absorbed at {ctx} tokens: decode step {n['step'] / a['step']:.2f}x, attention "
      f"time {n['attn_ms'] / a['attn_ms']:.2f}x, attention bytes {n['attn_mib'] / a['attn_mib']:.2f}x")
EOF
