# Shared helpers for the scripts in scripts/: quiet steps with logs, dependency install.
# Sourced, not executed. Every step logs to $FLUORO_LOG_DIR and prints its log tail on failure.

FLUORO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
FLUORO_LOG_DIR=${FLUORO_LOG_DIR:-$FLUORO_ROOT/build/logs}
mkdir -p "$FLUORO_LOG_DIR"

# ccache keys on the compiler's command line and the preprocessed text, both of which hold the
# checkout's absolute paths: rewritten relative to the build folder, a clone in another folder
# (CI's) hits the cache a build here filled. Debug info then names relative paths, too.
export CCACHE_BASEDIR="$FLUORO_ROOT" CCACHE_NOHASHDIR=1

die() { echo "error: $*" >&2; exit 1; }
note() { [ -n "${FLUORO_VERBOSE:-}" ] && echo "$*" >&2; return 0; }

# run_step NAME CMD...: runs CMD with output to a log; on failure shows the log's tail and exits.
run_step() {
    local name=$1; shift
    local log="$FLUORO_LOG_DIR/$name.log"
    note "== $name"
    if ! "$@" >"$log" 2>&1; then
        echo "error: step '$name' failed (full log: $log):" >&2
        tail -n 40 "$log" >&2
        exit 1
    fi
}

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Debian packages the build and tests need. Each line says what needs it.
FLUORO_DEBS=(
    build-essential cmake ninja-build ccache pkg-config git   # toolchain
    libpcre2-dev                                              # tokenizer pre-tokenizer regexes
    zlib1g-dev                                                # CRC-32 of the prefix cache file
    libssl-dev                # SHA-256 of model files (libcrypto), https to remote servers (libssl)
    openssl ca-certificates   # the system's CA certificates; the TLS test makes its own with openssl
    libgtest-dev libgmock-dev nlohmann-json3-dev              # tests and their JSON fixtures
    libbenchmark-dev                                          # micro-benchmarks (bench/)
    libcli11-dev                                              # the fluoro command line
    libsqlite3-dev                                            # the session store (app/store)
    libboost-dev                              # fluoro serve: Boost.Beast/Asio (app/server)
    libcpp-httplib-dev                                        # HTTP client of the server tests
    qt6-base-dev qt6-charts-dev qt6-svg-dev libgl-dev         # the Qt workbench (SVG export)
    libqt6opengl6-dev        # Qt6Charts' CMake config needs Qt6OpenGL; not a dependency of the deb
    xvfb xauth                                                # GUI tests and screenshots
    desktop-file-utils appstream                              # package checks (installers/)
    python3 python3-pip                                       # pip download of the models
    python3-jinja2                                            # reference of the Jinja template tests
)
FLUORO_SANITIZER_DEBS=(clang libclang-rt-14-dev)              # ASan/UBSan + libFuzzer build

# install_debs PKG...: apt-get installs only what is missing; no-op when all are present.
install_debs() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    note "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    run_step apt-update as_root apt-get update -q
    run_step apt-install as_root apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# install_pip_openai: the Python packages the server tests use - the `openai` client
# (tests/server/openai_client_test.py), `prometheus-client`, whose text-format parser reads
# GET /metrics back (tests/server/metrics_test.py), and llama.cpp's `gguf` writer with numpy
# (tests/server/scripted_qwen3_model.py writes the tool round trip's model); no-op when all import. Debian's pip
# refuses --user installs without --break-system-packages.
FLUORO_PIP_GGUF=gguf==0.19.0  # the version the arch fixtures were written with
install_pip_openai() {
    python3 -c "import openai, prometheus_client, gguf, numpy" >/dev/null 2>&1 && return 0
    note "installing the openai, prometheus-client, gguf and numpy Python packages"
    if ! python3 -m pip install --user --quiet openai prometheus-client "$FLUORO_PIP_GGUF" numpy \
        >"$FLUORO_LOG_DIR/pip-openai.log" 2>&1; then
        run_step pip-openai python3 -m pip install --user --quiet --break-system-packages \
            openai prometheus-client "$FLUORO_PIP_GGUF" numpy
    fi
}

# cmake_build DIR TARGET... [-- CMAKE_ARGS...]: configures (once) and builds quietly.
cmake_build() {
    local dir=$1; shift
    local targets=() args=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do targets+=("$1"); shift; done
    [ "${1:-}" = "--" ] && shift
    args=("$@")
    local name; name=$(basename "$dir")
    run_step "$name-configure" cmake -S "$FLUORO_ROOT" -B "$dir" -G Ninja "${args[@]}"
    local tflags=()
    for t in "${targets[@]}"; do tflags+=(--target "$t"); done
    run_step "$name-build" cmake --build "$dir" -j "$(nproc)" "${tflags[@]}"
}

# The pinned llama-cpp-python source package (it vendors llama.cpp): its version and sha256, the
# one pin of scripts/fetch-llama-cpp-source.sh (templates, vocabularies) and
# scripts/build-llama-tools.sh (llama-quantize, llama-bench).
LLAMA_CPP_SDIST_VERSION=0.3.36
LLAMA_CPP_SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
LLAMA_CPP_SDIST=llama_cpp_python-$LLAMA_CPP_SDIST_VERSION.tar.gz

# fetch_llama_cpp_sdist DIR: DIR/$LLAMA_CPP_SDIST from PyPI (or the local copy named by
# FLUORO_LLAMA_CPP_SDIST, for offline use), held to the pinned sha256; exits on any failure.
fetch_llama_cpp_sdist() {
    local work=$1
    if [ -n "${FLUORO_LLAMA_CPP_SDIST:-}" ]; then
        cp "$FLUORO_LLAMA_CPP_SDIST" "$work/$LLAMA_CPP_SDIST"
    else
        local log="$FLUORO_LOG_DIR/fetch-llama-cpp-python.log"
        # --no-binary: the sdist carries llama.cpp's sources (a wheel only the built library).
        if ! python3 -m pip download --no-deps --no-binary :all: --disable-pip-version-check -q \
                -d "$work" "llama-cpp-python==$LLAMA_CPP_SDIST_VERSION" >"$log" 2>&1; then
            echo "error: could not download llama-cpp-python==$LLAMA_CPP_SDIST_VERSION from PyPI" \
                "(offline?)" >&2
            tail -n 5 "$log" >&2
            exit 1
        fi
    fi
    local got
    got=$(sha256sum "$work/$LLAMA_CPP_SDIST" | cut -d' ' -f1)
    [ "$got" = "$LLAMA_CPP_SDIST_SHA256" ] ||
        die "$LLAMA_CPP_SDIST: sha256 $got does not match the pinned $LLAMA_CPP_SDIST_SHA256"
}
