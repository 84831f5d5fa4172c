#!/usr/bin/env bash
# The model files users run, by shape: scripts/make_shape_model.py writes each shape as F16 with
# seeded random weights, and the pinned llama.cpp's own llama-quantize (scripts/
# build-llama-tools.sh) turns it into the quantization mixes users download (Q4_K_M, Q8_0).
# Files go to a cache outside the repository, ${FLUORO_SHAPES_DIR:-$HOME/.cache/fluoro/shapes}:
# SHAPE.f16.gguf, SHAPE.Q4_K_M.gguf, SHAPE.Q8_0.gguf, and SHAPE.sha256 with every file's sha256
# (the generation is deterministic: the same script, seed and llama.cpp give the same bytes, and
# a file whose checksum no longer matches its record is made again). Refuses to start without
# the disk space the files need.
#   scripts/make-shape-models.sh                          llama-3.2-1b, Q4_K_M and Q8_0
#   scripts/make-shape-models.sh --shapes llama-3.2-1b,llama-3.2-3b --types Q4_K_M
#   --keep-f16   keep the F16 file (default: removed once quantized)
#   --print      only print the folder
# Shapes: python3 scripts/make_shape_model.py --list.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

shapes=llama-3.2-1b types=Q4_K_M,Q8_0 keep_f16=0 print_only=0
while [ $# -gt 0 ]; do
    case "$1" in
        --shapes) shapes=$2; shift ;;
        --types) types=$2; shift ;;
        --keep-f16) keep_f16=1 ;;
        --print) print_only=1 ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) die "unknown option '$1' (see --help)" ;;
    esac
    shift
done
dir=${FLUORO_SHAPES_DIR:-$HOME/.cache/fluoro/shapes}
mkdir -p "$dir"
[ "$print_only" = 1 ] && { echo "$dir"; exit 0; }

cd "$FLUORO_ROOT"
IFS=, read -r -a shape_list <<<"$shapes"
IFS=, read -r -a type_list <<<"$types"
for t in "${type_list[@]}"; do
    case "$t" in Q4_K_M|Q8_0|Q4_0|Q5_K_M|Q6_K) ;; *) die "type '$t' is not one this script makes" ;; esac
done
# Disk: the F16 file (2 bytes a parameter) plus each quantized file (at most 8.5 bits a
# parameter for Q8_0), and 1 GiB to spare.
need=0
for s in "${shape_list[@]}"; do
    p=$(python3 scripts/make_shape_model.py --params "$s") || die "unknown shape '$s' (python3 scripts/make_shape_model.py --list)"
    need=$((need + 2 * p + ${#type_list[@]} * p * 17 / 16))
done
need=$((need + (1 << 30)))
free=$(($(df --output=avail -B1 "$dir" | tail -n 1)))
[ "$free" -ge "$need" ] || die "$dir has $((free >> 20)) MiB free; these files need $((need >> 20)) MiB"

bin=$("$FLUORO_ROOT/scripts/build-llama-tools.sh")
for s in "${shape_list[@]}"; do
    sums="$dir/$s.sha256"
    touch "$sums"
    f16="$dir/$s.f16.gguf"
    # A quantized file is good when its recorded checksum matches.
    good() { [ -f "$dir/$1" ] && grep -q "  $1\$" "$sums" && (cd "$dir" && grep "  $1\$" "$sums" | sha256sum -c --quiet - >/dev/null 2>&1); }
    todo=()
    for t in "${type_list[@]}"; do good "$s.$t.gguf" || todo+=("$t"); done
    [ ${#todo[@]} -eq 0 ] && continue
    if ! good "$s.f16.gguf"; then
        run_step "shape-$s-f16" python3 scripts/make_shape_model.py "$s" "$f16"
        (cd "$dir" && sed -i "/  $s.f16.gguf\$/d" "$sums" && sha256sum "$s.f16.gguf" >>"$sums")
    fi
    for t in "${todo[@]}"; do
        run_step "shape-$s-$t" "$bin/llama-quantize" "$f16" "$dir/$s.$t.gguf" "$t"
        (cd "$dir" && sed -i "/  $s.$t.gguf\$/d" "$sums" && sha256sum "$s.$t.gguf" >>"$sums")
    done
    [ "$keep_f16" = 1 ] || rm -f "$f16"
done
echo "$dir"
