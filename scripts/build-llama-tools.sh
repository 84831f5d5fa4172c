#!/usr/bin/env bash
# Builds llama.cpp's own command-line tools (llama-quantize, llama-bench) from the llama.cpp that
# the pinned llama-cpp-python 0.3.36 source package on PyPI vendors (the same archive and sha256
# as scripts/fetch-llama-cpp-source.sh), once per machine, into a cache outside the repository
# keyed by that sha256: ${FLUORO_LLAMA_TOOLS_CACHE:-$HOME/.cache/fluoro/llama-tools}/<sha256>/bin.
# Native instruction set (GGML_NATIVE, llama.cpp's default), Release, CPU only. On a CPU with
# AMX-INT8 the pinned llama.cpp crashes on batched evaluation: there, and with --amx-off, it is
# built with its AMX paths off (-mno-amx-*) into <sha256>-amx-off instead, and says so.
# Several minutes on 2 cores; later calls only print the folder.
#   scripts/build-llama-tools.sh            build if missing, print the bin folder
#   scripts/build-llama-tools.sh --amx-off  the AMX-off build
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

version=$LLAMA_CPP_SDIST_VERSION
sha256=$LLAMA_CPP_SDIST_SHA256
sdist=$LLAMA_CPP_SDIST
cache=${FLUORO_LLAMA_TOOLS_CACHE:-$HOME/.cache/fluoro/llama-tools}
targets=(llama-quantize llama-bench)

amx_off=0
case "${1:-}" in
    --amx-off) amx_off=1 ;;
    "") ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
esac
grep -qw amx_int8 /proc/cpuinfo 2>/dev/null && amx_off=1

dest="$cache/$sha256"
[ "$amx_off" = 1 ] && dest="$dest-amx-off"
done_marker="$dest/bin/.built"
if [ ! -f "$done_marker" ]; then
    for t in cmake c++; do command -v "$t" >/dev/null || die "$t is needed to build llama.cpp"; done
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    fetch_llama_cpp_sdist "$work"
    tar -xzf "$work/$sdist" -C "$work" "llama_cpp_python-$version/vendor/llama.cpp"
    src="$work/llama_cpp_python-$version/vendor/llama.cpp"
    flags=()
    if [ "$amx_off" = 1 ]; then
        echo "note: building llama.cpp with its AMX paths off (-mno-amx-*)" >&2
        flags+=(-DCMAKE_C_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
                -DCMAKE_CXX_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16")
    fi
    run_step llama-tools-configure cmake -S "$src" -B "$work/build" -G Ninja \
        -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DGGML_CUDA=OFF -DLLAMA_CURL=OFF \
        -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_SERVER=OFF "${flags[@]}"
    run_step llama-tools-build cmake --build "$work/build" -j "$(nproc)" \
        $(printf -- '--target %s ' "${targets[@]}")
    mkdir -p "$dest/bin"
    for t in "${targets[@]}"; do cp "$work/build/bin/$t" "$dest/bin/"; done
    echo "$sha256" >"$done_marker"
    note "built ${targets[*]} into $dest/bin"
fi
echo "$dest/bin"
