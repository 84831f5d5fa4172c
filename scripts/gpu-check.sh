#!/usr/bin/env bash
# Builds and runs the CUDA backend's tests (fluoro_cuda_tests) on a machine with an NVIDIA GPU,
# e.g. a lent H200 with the CUDA toolkit. Without a GPU the tests skip; this script then still
# builds and runs them (proving the toolchain) but exits 3, so "nothing was checked" never
# passes for success. With a GPU, FLUORO_REQUIRE_CUDA=1 turns any skip into a failure.
#   usage: scripts/gpu-check.sh [build-dir]     (default: build-gpu-check)
#   env:   FLUORO_GPU_PREFIX  extra CMAKE_PREFIX_PATH (GTest, nlohmann_json, PCRE2 if not system)
# Exit: 0 all passed on a GPU; 1 configure/build/test failure; 2 no nvcc/cmake; 3 no GPU.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build-gpu-check}"
say() { printf 'gpu-check: %s\n' "$*"; }

have_gpu=1
if ! command -v nvidia-smi >/dev/null 2>&1; then
    say "NO GPU: nvidia-smi not found (no NVIDIA driver); the CUDA tests will skip"
    have_gpu=0
elif ! nvidia-smi -L; then
    say "NO GPU: nvidia-smi -L failed; the CUDA tests will skip"
    have_gpu=0
fi

if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
    export PATH="/usr/local/cuda/bin:$PATH"
fi
command -v nvcc >/dev/null 2>&1 || { say "nvcc not found: install the CUDA toolkit"; exit 2; }
command -v cmake >/dev/null 2>&1 || { say "cmake not found"; exit 2; }
say "$(nvcc --version | tail -n 1)"

args=(-DCMAKE_BUILD_TYPE=Release -DFLUORO_CUDA=ON -DFLUORO_GUI=OFF)
command -v ninja >/dev/null 2>&1 && args+=(-G Ninja)
[[ -n "${FLUORO_GPU_PREFIX:-}" ]] && args+=(-DCMAKE_PREFIX_PATH="$FLUORO_GPU_PREFIX")
if ! cmake -S "$root" -B "$build" "${args[@]}"; then
    say "FAILED: configure (missing GTest / nlohmann_json / PCRE2? set FLUORO_GPU_PREFIX)"
    exit 1
fi
cmake --build "$build" --target fluoro_cuda_tests -j16 || { say "FAILED: build"; exit 1; }

status=0
if ((have_gpu)); then
    FLUORO_REQUIRE_CUDA=1 "$build/tests/fluoro_cuda_tests" --gtest_brief=1 || status=1
else
    "$build/tests/fluoro_cuda_tests" --gtest_brief=1 || status=1
fi

if ((have_gpu)); then nvidia-smi -L || true; fi
if ((status != 0)); then say "FAILED: fluoro_cuda_tests"; exit 1; fi
if ((!have_gpu)); then say "NO GPU: built and ran, but the device tests were skipped"; exit 3; fi
say "OK: all CUDA tests passed on the GPU"
