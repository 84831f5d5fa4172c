#!/usr/bin/env bash
# Starts Fluoroscope on the default model on a fresh machine: installs what is missing, builds
# Release, fetches SmolLM2-135M-Instruct if absent, then opens the workbench window (fluoroscope)
# on it. Without a display (no DISPLAY / WAYLAND_DISPLAY) it says how to get one and falls back
# to the terminal chat (fluoro chat). Extra arguments go to the program that starts.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
cd "$FLUORO_ROOT"

MODEL="$FLUORO_ROOT/models/SmolLM2-135M-Instruct.Q4_1.gguf"
install_debs "${FLUORO_DEBS[@]}"
"$FLUORO_ROOT/scripts/fetch-model.sh"
run_step release-configure cmake --preset release
run_step release-build cmake --build --preset release -j "$(nproc)" --target fluoro fluoroscope

if [[ -z "${DISPLAY:-}" && -z "${WAYLAND_DISPLAY:-}" && "${QT_QPA_PLATFORM:-}" != offscreen ]]; then
    cat >&2 <<MSG
No display found (DISPLAY and WAYLAND_DISPLAY are unset), so the workbench window cannot open.
  - With a virtual display:   xvfb-run -a build/release/ui/fluoroscope "$MODEL"
  - A screenshot, no display: QT_QPA_PLATFORM=offscreen build/release/ui/fluoroscope --screenshot shot.png
Starting the terminal chat instead (fluoro chat).
MSG
    exec "$FLUORO_ROOT/build/release/app/fluoro" chat "$MODEL" "$@"
fi
exec "$FLUORO_ROOT/build/release/ui/fluoroscope" "$MODEL" "$@"
