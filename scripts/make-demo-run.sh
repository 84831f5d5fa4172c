#!/usr/bin/env bash
# Records the run that `fluoroscope --demo` replays: one reply of the default model at telemetry
# level full, saved with `fluoro run --save` into a scratch database and exported as the
# conversation JSON (docs/STORAGE.md) to resources/demo/demo-run.json, which the GUI bundles.
# Usage: scripts/make-demo-run.sh [BUILD_DIR]   (default build/release; needs the fluoro target)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build/release}"
FLUORO="$BUILD/app/fluoro"
MODEL="$ROOT/models/SmolLM2-135M-Instruct.Q4_1.gguf"
OUT="$ROOT/resources/demo/demo-run.json"
[[ -x "$FLUORO" ]] || { echo "no $FLUORO: build the fluoro target first" >&2; exit 1; }
[[ -f "$MODEL" ]] || "$ROOT/scripts/fetch-model.sh"

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
DB="$TMP/demo.db"
"$FLUORO" run "$MODEL" \
    "Write a Python function that returns the square of a number." \
    --save --db "$DB" --telemetry full --seed 42 --temp 0.8 -n 128 -t 2 -q >/dev/null
ID="$("$FLUORO" sessions --db "$DB" list | awk -F'|' '$2 ~ /^ *[0-9]+ *$/ { id = $2 } END { gsub(/ /, "", id); print id }')"
[[ -n "$ID" ]] || { echo "no conversation was saved in $DB" >&2; exit 1; }
mkdir -p "$(dirname "$OUT")"
"$FLUORO" sessions --db "$DB" export "$ID" --format json -o "$OUT"
echo "wrote $OUT ($(wc -c <"$OUT") bytes) from conversation $ID"
