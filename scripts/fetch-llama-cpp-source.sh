#!/usr/bin/env bash
# Fetches from the llama-cpp-python 0.3.36 source package on PyPI, verified against a pinned
# sha256, what the tests compare against:
#   models/llama-cpp-python-0.3.36/templates  the ~70 real chat templates llama.cpp collects
#                                             (tests/tools/jinja_compare.py renders them)
#   models/llama-cpp-python-0.3.36/vocab      llama.cpp's ggml-vocab-*.gguf vocabulary files with
#                                             their .inp/.out tokenizer cases (GgmlVocab tests)
# Idempotent: a verified unpack is kept (the 77 MB archive itself is not). FLUORO_LLAMA_CPP_SDIST
# may name a local copy of the archive (offline); it is held to the same sha256.
#   scripts/fetch-llama-cpp-source.sh                    fetch (quiet)
#   scripts/fetch-llama-cpp-source.sh --print-templates  fetch, then print the templates folder
#   scripts/fetch-llama-cpp-source.sh --print-vocab      fetch, then print the vocab folder
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

version=$LLAMA_CPP_SDIST_VERSION
sha256=$LLAMA_CPP_SDIST_SHA256
sdist=$LLAMA_CPP_SDIST
dest="$FLUORO_ROOT/models/llama-cpp-python-$version"
# What an unpack holds; a marker without it (an older unpack: templates only) is refreshed.
layout="templates vocab"
print=
case "${1:-}" in
    --print-templates) print=templates ;;
    --print-vocab) print=vocab ;;
    "") ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
esac

# The marker holds the archive's sha256 and the layout: it is written only after the archive
# matched the pin and everything was unpacked.
marker="$sha256 $layout"
if [ "$(cat "$dest/.sha256" 2>/dev/null)" != "$marker" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    fetch_llama_cpp_sdist "$work"
    rm -rf "$dest"
    mkdir -p "$dest/templates" "$dest/vocab"
    models="llama_cpp_python-$version/vendor/llama.cpp/models"
    tar -xzf "$work/$sdist" -C "$work" --wildcards "$models/templates/*" "$models/ggml-vocab-*"
    cp "$work/$models"/templates/* "$dest/templates/"
    cp "$work/$models"/ggml-vocab-* "$dest/vocab/"
    echo "$marker" >"$dest/.sha256"
    note "fetched $dest/templates and $dest/vocab"
fi
[ -n "$print" ] && echo "$dest/$print"
exit 0
