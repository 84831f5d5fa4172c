#!/usr/bin/env bash
# Starts Fluoroscope on the default model on a fresh machine: installs what is missing, builds
# Release, fetches SmolLM2-135M-Instruct if absent, then runs `fluoro chat` (until the GUI lands).
# Extra arguments go to `fluoro chat` (e.g. --model PATH).
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$FLUORO_ROOT"

install_debs "${FLUORO_DEBS[@]}"
"$FLUORO_ROOT/scripts/fetch-model.sh"
run_step release-configure cmake --preset release
run_step release-build cmake --build --preset release -j "$(nproc)" --target fluoro
exec "$FLUORO_ROOT/build/release/app/fluoro" chat "$FLUORO_ROOT/models/SmolLM2-135M-Instruct.Q4_1.gguf" "$@"
