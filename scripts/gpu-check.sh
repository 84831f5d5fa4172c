#!/usr/bin/env bash
# One command for a machine with an NVIDIA GPU: builds the CUDA backend (or takes binaries built
# elsewhere), runs the CUDA tests (each op and whole models against the CPU backend), the GPU
# kernel benchmarks and pp512/tg128 on the GPU and the CPU, and prints a short table last.
#   usage: scripts/gpu-check.sh [build-dir]          (default: build-gpu-check)
#   env:   FLUORO_GPU_PREBUILT=1   use the binaries already in build-dir (scripts/gpu-bundle.sh
#                                  builds them on a CPU machine when this one lacks the
#                                  libraries the build needs)
#          FLUORO_GPU_MODELS       colon-separated GGUFs for the CPU-vs-CUDA model tests, each
#                                  optionally "=REFERENCE" (the CPU's copy, dequantized)
#                                  (default: the default models in models/, with references
#                                  made here by fluoro_gguf_reshape --dequantize)
#          FLUORO_GPU_BENCH_MODELS colon-separated GGUFs for pp512/tg128 (default: the same)
#          FLUORO_GPU_FIXTURES     folder of the arch_*/quant_* fixtures and their dequantized
#                                  NAME-f32.gguf copies (default: made under the out-dir from
#                                  tests/reference/fixtures)
#          FLUORO_GPU_PREFIX       extra CMAKE_PREFIX_PATH for the build (GTest, nlohmann_json, ...)
#          FLUORO_GPU_OUT          folder for the logs (default: build-dir/gpu-check)
#          FLUORO_GPU_DRY_RUN=1    without a GPU, go on past the tests (dry-runs the benchmark
#                                  steps on a CPU machine; the GPU ones fail there, visibly)
# Exit: 0 all passed on a GPU; 1 configure/build/test failure; 2 no nvcc/cmake; 3 no GPU.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build-gpu-check}"
out="${FLUORO_GPU_OUT:-$build/gpu-check}"
mkdir -p "$out"
say() { printf 'gpu-check: %s\n' "$*"; }
start=$(date +%s)

have_gpu=1
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L; then
    say "NO GPU: nvidia-smi missing or failing; the CUDA tests will skip"
    have_gpu=0
fi

if [[ "${FLUORO_GPU_PREBUILT:-0}" != 1 ]]; then
    if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
        export PATH="/usr/local/cuda/bin:$PATH"
    fi
    command -v nvcc >/dev/null 2>&1 || { say "nvcc not found: install the CUDA toolkit"; exit 2; }
    command -v cmake >/dev/null 2>&1 || { say "cmake not found"; exit 2; }
    say "$(nvcc --version | tail -n 1)"
    args=(-DCMAKE_BUILD_TYPE=Release -DFLUORO_CUDA=ON -DFLUORO_GUI=OFF)
    command -v ninja >/dev/null 2>&1 && args+=(-G Ninja)
    [[ -n "${FLUORO_GPU_PREFIX:-}" ]] && args+=(-DCMAKE_PREFIX_PATH="$FLUORO_GPU_PREFIX")
    cmake -S "$root" -B "$build" "${args[@]}" >"$out/configure.log" 2>&1 ||
        { tail -20 "$out/configure.log"; say "FAILED: configure (set FLUORO_GPU_PREFIX?)"; exit 1; }
    cmake --build "$build" -j"$(nproc)" --target fluoro_cuda_tests fluoro fluoro_gguf_reshape \
        fluoro_cuda_gemv_bench fluoro_cuda_attention_bench >"$out/build.log" 2>&1 ||
        { tail -40 "$out/build.log"; say "FAILED: build"; exit 1; }
fi
tests="$build/tests/fluoro_cuda_tests"
fluoro="$build/app/fluoro"
[[ -x "$tests" && -x "$fluoro" ]] || { say "missing binaries in $build"; exit 1; }

# Model tests compare "model=CPU reference" pairs; the reference is the model dequantized to F32
# (tests/cuda/cuda_model_test.cpp says why).
models="${FLUORO_GPU_MODELS:-}"
bench_models="${FLUORO_GPU_BENCH_MODELS:-}"
if [[ -z "$models" ]]; then
    for f in "$root/models/SmolLM2-135M-Instruct.Q4_1.gguf" "$root/models/gemma-3-270m-q4_k_m.gguf"; do
        [[ -f "$f" ]] || continue
        ref="$out/$(basename "$f" .gguf)-f32.gguf"
        "$build/tests/fluoro_gguf_reshape" "$f" "$ref" --dequantize >/dev/null || ref="$f"
        models="${models:+$models:}$f=$ref"
        [[ -n "${FLUORO_GPU_BENCH_MODELS:-}" ]] || bench_models="${bench_models:+$bench_models:}$f"
    done
fi

# The synthetic architecture and quant-type fixtures, each with its dequantized copy for the CPU
# side (tests/cuda/cuda_model_test.cpp, CudaArchFixtureTest, says why).
if [[ -z "${FLUORO_GPU_FIXTURES:-}" ]]; then
    export FLUORO_GPU_FIXTURES="$out/fixtures"
    mkdir -p "$FLUORO_GPU_FIXTURES"
    for f in "$root"/tests/reference/fixtures/{arch,quant}_*.gguf; do
        cp "$f" "$FLUORO_GPU_FIXTURES/"
        "$build/tests/fluoro_gguf_reshape" "$f" "$FLUORO_GPU_FIXTURES/$(basename "$f" .gguf)-f32.gguf" \
            --dequantize >/dev/null || say "could not dequantize $(basename "$f")"
    done
fi

# 1. Tests: every op and both models against the CPU backend.
status=0
say "tests ($((($(date +%s) - start))) s in)"
# One process per suite, each under a time limit: a kernel fault leaves the CUDA context
# unusable, so it must cost only its own suite, and a hang only a minute.
: >"$out/tests.log"
for suite in $("$tests" --gtest_list_tests | grep -E '^[A-Za-z].*\.$'); do
    if ((have_gpu)); then
        FLUORO_REQUIRE_CUDA=1 FLUORO_GPU_MODELS="$models" timeout 90 "$tests" --gtest_brief=1 \
            --gtest_filter="$suite*" >>"$out/tests.log" 2>&1 || { status=1; say "FAILED suite $suite"; }
    else
        timeout 90 "$tests" --gtest_brief=1 --gtest_filter="$suite*" >>"$out/tests.log" 2>&1 ||
            { status=1; say "FAILED suite $suite"; }
    fi
done
grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/tests.log" | sort | uniq -c
if ((!have_gpu)) && [[ "${FLUORO_GPU_DRY_RUN:-0}" != 1 ]]; then
    say "NO GPU: built and ran, but the device tests were skipped"
    exit 3
fi

# 2. Kernel benchmarks (each prints its own table).
for b in gemv attention; do
    exe="$build/tests/fluoro_cuda_${b}_bench"
    if [[ -x "$exe" ]]; then
        say "$b benchmark ($((($(date +%s) - start))) s in)"
        timeout 120 "$exe" 2>&1 | tee "$out/$b-bench.log" || say "$b benchmark failed"
    fi
done

# 3. pp512 / tg128 per model, CUDA and CPU (all cores), same binary.
summary="$out/summary.md"
{
    echo "| model | backend | threads | test | t/s |"
    echo "| --- | --- | --- | --- | --- |"
} >"$summary"
IFS=: read -r -a bms <<<"$bench_models"
for m in "${bms[@]}"; do
    [[ -f "$m" ]] || continue
    for be in cuda cuda-d4096 cpu; do
        say "bench $(basename "$m") $be ($((($(date +%s) - start))) s in)"
        flags=(-p 512 -n 128 -r 5 --backend "$be")
        [[ $be == cuda-d4096 ]] && flags=(-p 0 -n 128 -d 4096 -c 8192 -r 5 --backend cuda)
        [[ $be == cpu ]] && flags=(-p 512 -n 128 -r 2 --backend cpu -t "$(nproc)")
        if FLUORO_DATA_DIR="$out/data" timeout 240 "$fluoro" bench "$m" "${flags[@]}" \
            >"$out/bench-$be-$(basename "$m").log" 2>&1; then
            grep -E '^\| .* \| (pp|tg)[0-9]+(@d[0-9]+)? \|' "$out/bench-$be-$(basename "$m").log" |
                awk -F'|' -v f="$(basename "$m")" '{printf "| %s |%s|%s|%s|%s|\n", f, $4, $5, $6, $7}' \
                    >>"$summary"
        else
            tail -5 "$out/bench-$be-$(basename "$m").log"
            echo "| $(basename "$m") | $be | | failed | |" >>"$summary"
        fi
    done
done

echo
say "summary ($((($(date +%s) - start))) s)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
grep -E '^\[  (PASSED|FAILED|SKIPPED)|tests? ran|FAILED TEST' "$out/tests.log" | tail -12
grep -hE 'nrmse|captured' "$out/tests.log" | head -80
for b in gemv attention; do
    [[ -f "$out/$b-bench.log" ]] && tail -n 12 "$out/$b-bench.log"
done
echo "CUDA graphs: not implemented yet (each decode step launches its kernels one by one)"
cat "$summary"
if ((status != 0)); then say "FAILED: fluoro_cuda_tests"; exit 1; fi
if ((!have_gpu)); then say "DRY RUN without a GPU: nothing was checked"; exit 3; fi
say "OK: all CUDA tests passed on the GPU"
