#!/usr/bin/env bash
# Fetches the chat templates llama.cpp collects in models/templates (~70 real model templates) from
# the llama-cpp-python 0.3.36 source package on PyPI, verified against a pinned sha256, into
# models/llama-cpp-python-0.3.36/templates. tests/tools/jinja_compare.py renders them.
# Idempotent: a verified unpack is kept (the 77 MB archive itself is not).
#   scripts/fetch-llama-cpp-source.sh                    fetch (quiet)
#   scripts/fetch-llama-cpp-source.sh --print-templates  fetch, then print the templates folder
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

version=0.3.36
sha256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
sdist=llama_cpp_python-$version.tar.gz
dest="$FLUORO_ROOT/models/llama-cpp-python-$version"
print=0
case "${1:-}" in
    --print-templates) print=1 ;;
    "") ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
esac

# The marker holds the archive's sha256: it is written only after the archive matched the pin.
if [ "$(cat "$dest/.sha256" 2>/dev/null)" != "$sha256" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    log="$FLUORO_LOG_DIR/fetch-llama-cpp-python.log"
    # --no-binary: the sdist carries llama.cpp's sources (a wheel carries only the built library).
    if ! python3 -m pip download --no-deps --no-binary :all: --disable-pip-version-check -q \
            -d "$work" "llama-cpp-python==$version" >"$log" 2>&1; then
        echo "error: could not download llama-cpp-python==$version from PyPI (offline?)" >&2
        tail -n 5 "$log" >&2
        exit 1
    fi
    got=$(sha256sum "$work/$sdist" | cut -d' ' -f1)
    [ "$got" = "$sha256" ] || die "$sdist: sha256 $got does not match the pinned $sha256"
    rm -rf "$dest"
    mkdir -p "$dest/templates"
    tar -xzf "$work/$sdist" -C "$work" --wildcards "*/vendor/llama.cpp/models/templates/*"
    cp "$work"/llama_cpp_python-$version/vendor/llama.cpp/models/templates/* "$dest/templates/"
    echo "$sha256" >"$dest/.sha256"
    note "fetched $dest/templates"
fi
[ "$print" = 1 ] && echo "$dest/templates"
exit 0
