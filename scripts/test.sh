#!/usr/bin/env bash
# The whole suite on a fresh machine: installs what is missing, fetches both test models and
# llama.cpp's reference files, builds Release (GUI, CUDA when nvcc is found) and the ASan+UBSan
# build (engine tests and a bounded libFuzzer run), and runs everything through ctest. Quiet on
# success.
#   scripts/test.sh            everything
#   scripts/test.sh --fast     Release build and tests only (no sanitizer build)
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$FLUORO_ROOT"

fast=0
[ "${1:-}" = "--fast" ] && fast=1

install_debs "${FLUORO_DEBS[@]}"
[ "$fast" = 1 ] || install_debs "${FLUORO_SANITIZER_DEBS[@]}"
install_pip_openai
"$FLUORO_ROOT/scripts/fetch-model.sh" --all
# llama.cpp's chat templates and ggml-vocab-*.gguf tokenizer cases (JinjaCompare,
# ChatContentsRealTemplates, GgmlVocab).
"$FLUORO_ROOT/scripts/fetch-llama-cpp-source.sh"

# Real-model tests must run here, never skip: a missing model fails them.
export FLUORO_REQUIRE_MODELS=1
export FLUORO_MODELS_DIR="$FLUORO_ROOT/models"
export QT_QPA_PLATFORM=offscreen
# Tests write their scratch files (per-process names, tests/test_temp.h) under testing::TempDir(),
# which honours TEST_TMPDIR: one directory per run, emptied first, instead of litter in /tmp.
export TEST_TMPDIR="$FLUORO_ROOT/build/test-tmp"
rm -rf "$TEST_TMPDIR"
mkdir -p "$TEST_TMPDIR"

total_pass=0 total_fail=0
run_ctest() {  # run_ctest PRESET: builds and tests one preset, prints ctest's summary line
    local preset=$1
    run_step "$preset-configure" cmake --preset "$preset" -S "$FLUORO_ROOT"
    run_step "$preset-build" cmake --build --preset "$preset" -j "$(nproc)"
    local log="$FLUORO_LOG_DIR/$preset-ctest.log"
    local rc=0
    (cd "$FLUORO_ROOT" && ctest --preset "$preset" -j "$(nproc)" --timeout 900) >"$log" 2>&1 || rc=$?
    local summary; summary=$(grep -E 'tests passed|tests failed' "$log" | tail -n 1 || true)
    local n_total n_failed
    n_total=$(sed -nE 's/.* out of ([0-9]+).*/\1/p' <<<"$summary")
    n_failed=$(sed -nE 's/.* ([0-9]+) tests failed.*/\1/p' <<<"$summary")
    total_pass=$((total_pass + ${n_total:-0} - ${n_failed:-0}))
    total_fail=$((total_fail + ${n_failed:-0}))
    echo "$preset: ${summary:-ctest printed no summary}"
    if [ "$rc" != 0 ]; then
        grep -E '^\s*[0-9]+ - |\*\*\*Failed|Timeout|Not Run' "$log" | tail -n 30 >&2 || true
        echo "error: $preset tests failed (full log: $log)" >&2
        [ "${n_failed:-0}" = 0 ] && total_fail=$((total_fail + 1))
    fi
}

run_ctest release
[ "$fast" = 1 ] || run_ctest asan
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" = 0 ]
