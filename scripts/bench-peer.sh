#!/usr/bin/env bash
# fluoro against llama.cpp on the same GGUF files, threads and lengths, in one run, as ratios
# (this machine is shared and noisy: only side-by-side numbers mean anything), plus the decode
# roofline from a measured memory bandwidth. Tests: pp512, tg128 and tg128 at depth 4096 (4096
# tokens already in the KV cache), each run --runs times per engine, alternating fluoro /
# llama.cpp, every run a fresh process; the report gives median tok/s and fluoro / llama.cpp.
#
# llama.cpp is driven through llama-cpp-python's low-level API (scripts/peer/llamacpp_bench.py,
# the methodology of llama-bench and `fluoro bench`). When the package is missing it is installed
# with pip at the version pinned below: pip BUILDS llama.cpp FROM SOURCE for this CPU (native
# instruction set), which takes several minutes and needs a C/C++ compiler and cmake.
#
#   scripts/bench-peer.sh                      both default models, threads = physical cores
#   scripts/bench-peer.sh --quick              smoke test: 2 runs, pp64 / tg16 / tg16@d256
#   --model PATH         a GGUF to measure (repeatable; default: the two models in models/)
#   --threads N          threads for both engines and the bandwidth test
#   --runs N             runs per engine and test (default 5)
#   --reps N             timed repetitions inside each run, after its warm-up (default 1)
#   --depth D            the depth of the third test (default 4096)
#   --depths D1,D2,...   decode at each of these depths instead (the decode-vs-depth curve, e.g.
#                        0,1024,4096,16384,32768); a depth past a model's trained context less
#                        the generated tokens is skipped for that model, and said so
#   --peer python|llama-bench
#                        how llama.cpp runs: python (default) through llama-cpp-python as below;
#                        llama-bench: llama.cpp's own llama-bench built from the same pinned
#                        source by scripts/build-llama-tools.sh, at its own defaults (flash
#                        attention auto, batch 2048 / ubatch 512), as its users run it (on an AMX
#                        host that build has AMX off, and --amx-off-peer does not apply)
#   --flash-attn         llama.cpp with its flash attention (default off through python; through
#                        llama-bench, on instead of its default auto; ours is on by default)
#   --fluoro PATH        the fluoro binary (default build/release/app/fluoro, built if missing)
#   --membw PATH         the bandwidth tool (default build/release/bench/fluoro_membw)
#   --note TEXT          a line for the report (e.g. what the binary was built from)
#   --run-timeout S      a run still going after S seconds (default 1800) is killed, recorded
#                        as failed and tried once more
#   --out DIR            where results go (default build/bench-peer/<date>-t<threads>)
#   --amx-off-peer auto|yes|no
#                        also measure llama.cpp built with its AMX paths off (default auto: yes
#                        on a CPU with AMX-INT8). llama.cpp as pinned crashes (SIGSEGV) on batched
#                        evaluation on the Intel AMX hosts; with this, a row whose AMX-build runs
#                        all fail is measured with the AMX-off build instead (marked in the
#                        report), and tg128 runs on both builds so the report shows what AMX is
#                        worth to llama.cpp's decode. The AMX-off copy is built once (pip, from
#                        source, -mno-amx-*: several minutes) into build/bench-peer/
#                        llama-cpp-python-amx-off and put first on PYTHONPATH for those runs.
# Writes DIR/report.md (its ratios update the peer table of docs/PERFORMANCE.md; the full report
# goes to docs/history/), report.json and the raw runs.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

LLAMA_CPP_PYTHON_VERSION=0.3.36  # llama-cpp-python pin (bundles llama.cpp; built from source)

quick=0 runs="" reps=1 threads="" depth="" depths="" flash=0 out="" note="" run_timeout=1800
peer=python
amx_off_peer=auto
fluoro="$FLUORO_ROOT/build/release/app/fluoro"
membw="$FLUORO_ROOT/build/release/bench/fluoro_membw"
models=()
args_line="scripts/bench-peer.sh $*"
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --model) models+=("$(realpath "$2")"); shift ;;
        --threads) threads=$2; shift ;;
        --runs) runs=$2; shift ;;
        --reps) reps=$2; shift ;;
        --depth) depth=$2; shift ;;
        --depths) depths=$2; shift ;;
        --flash-attn) flash=1 ;;
        --peer) peer=$2; shift ;;
        --fluoro) fluoro=$(realpath "$2"); shift ;;
        --membw) membw=$(realpath "$2"); shift ;;
        --note) note=$2; shift ;;
        --run-timeout) run_timeout=$2; shift ;;
        --out) out=$(realpath -m "$2"); shift ;;
        --amx-off-peer) amx_off_peer=$2; shift ;;
        -h|--help) sed -n '2,46p' "$0"; exit 0 ;;
        *) die "unknown option '$1' (see --help)" ;;
    esac
    shift
done
cd "$FLUORO_ROOT"
if [ "$quick" = 1 ]; then
    n_prompt=64 n_gen=16 runs=${runs:-2} depth=${depth:-256} membw_args=(--size-mib 256 --runs 3)
else
    n_prompt=512 n_gen=128 runs=${runs:-5} depth=${depth:-4096}
    membw_args=(--size-mib 1024 --runs 7)
fi

# --- llama-cpp-python -------------------------------------------------------------------------
py=python3
case "$peer" in
    python|llama-bench) ;;
    *) die "--peer takes python or llama-bench, not '$peer'" ;;
esac
[ -x "$FLUORO_ROOT/.venv/bin/python" ] && [ "$peer" = python ] && py="$FLUORO_ROOT/.venv/bin/python"
if [ "$peer" = llama-bench ]; then
    llama_bench="$("$FLUORO_ROOT/scripts/build-llama-tools.sh")/llama-bench"
    llama_ver="$LLAMA_CPP_PYTHON_VERSION (llama-bench)"
    amx_off_peer=no
elif ! "$py" -c 'import llama_cpp' 2>/dev/null; then
    echo "llama-cpp-python is missing: installing $LLAMA_CPP_PYTHON_VERSION with pip. This builds" \
        "llama.cpp from source for this CPU and takes several minutes." >&2
    install_debs build-essential cmake python3 python3-pip
    log="$FLUORO_LOG_DIR/pip-llama-cpp-python.log"
    pkg="llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
    if ! "$py" -m pip install --disable-pip-version-check "$pkg" >"$log" 2>&1; then
        if ! grep -q externally-managed "$log"; then
            tail -n 30 "$log" >&2
            die "pip could not install $pkg (log: $log)"
        fi
        # A distribution-managed Python: install into the project's own venv instead.
        install_debs python3-venv
        run_step venv python3 -m venv "$FLUORO_ROOT/.venv"
        py="$FLUORO_ROOT/.venv/bin/python"
        run_step pip-llama-cpp-python "$py" -m pip install --disable-pip-version-check "$pkg"
    fi
fi
[ "$peer" = llama-bench ] || llama_ver=$("$py" -c 'import llama_cpp; print(llama_cpp.__version__)')
[ "$peer" = llama-bench ] || [ "$llama_ver" = "$LLAMA_CPP_PYTHON_VERSION" ] ||
    echo "warning: llama-cpp-python $llama_ver is installed (pinned: $LLAMA_CPP_PYTHON_VERSION);" \
        "measuring against $llama_ver" >&2

# --- llama-cpp-python with AMX off (AMX hosts) ---------------------------------------------------
case "$amx_off_peer" in
    auto) amx_off_peer=no; grep -qw amx_int8 /proc/cpuinfo 2>/dev/null && amx_off_peer=yes ;;
    yes|no) ;;
    *) die "--amx-off-peer takes auto, yes or no, not '$amx_off_peer'" ;;
esac
amx_off_dir="$FLUORO_ROOT/build/bench-peer/llama-cpp-python-amx-off"
# "VERSION SYSTEM-INFO" of the llama_cpp in directory $1 ("" when PYTHONPATH=$1 imports none, or
# imports another one, such as the default build in the user's site-packages).
peer_system_info() {
    PYTHONPATH=$1 "$py" - "$1" <<'PY' 2>/dev/null || true
import os, sys
import llama_cpp
if os.path.realpath(llama_cpp.__file__).startswith(os.path.realpath(sys.argv[1]) + os.sep):
    print(llama_cpp.__version__, llama_cpp.llama_print_system_info().decode())
PY
}
if [ "$amx_off_peer" = yes ]; then
    info=$(peer_system_info "$amx_off_dir")
    if [ "${info%% *}" != "$LLAMA_CPP_PYTHON_VERSION" ]; then
        echo "building llama-cpp-python $LLAMA_CPP_PYTHON_VERSION with AMX off into $amx_off_dir" \
            "(from source: several minutes)" >&2
        install_debs build-essential cmake python3 python3-pip
        rm -rf "$amx_off_dir"
        # -march=native (GGML_NATIVE) turns AMX on by the compiler's own macros; the explicit
        # -mno-amx-* win over it whatever their order. --no-cache-dir: pip's cached wheel is the
        # AMX build of the same version.
        no_amx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
        run_step pip-llama-cpp-python-amx-off env CFLAGS="$no_amx" CXXFLAGS="$no_amx" \
            "$py" -m pip install --disable-pip-version-check --no-cache-dir --no-deps \
            --no-binary llama-cpp-python --target "$amx_off_dir" \
            "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
        info=$(peer_system_info "$amx_off_dir")
    fi
    [ "${info%% *}" = "$LLAMA_CPP_PYTHON_VERSION" ] ||
        die "the AMX-off llama-cpp-python in $amx_off_dir does not import"
    case "$info" in
        *AMX*) die "the AMX-off llama-cpp-python in $amx_off_dir still reports AMX: ${info#* }" ;;
    esac
fi

# --- our binaries and the models ----------------------------------------------------------------
if [ ! -x "$fluoro" ] || [ ! -x "$membw" ]; then
    echo "building Release fluoro and fluoro_membw (build/release)..." >&2
    install_debs "${FLUORO_DEBS[@]}"
    run_step release-configure cmake --preset release
    run_step release-build cmake --build --preset release -j "$(nproc)" --target fluoro \
        --target fluoro_membw
fi
if [ ${#models[@]} -eq 0 ]; then
    "$FLUORO_ROOT/scripts/fetch-model.sh" --all
    models=("$FLUORO_ROOT/models/SmolLM2-135M-Instruct.Q4_1.gguf"
            "$FLUORO_ROOT/models/gemma-3-270m-q4_k_m.gguf")
fi
for m in "${models[@]}"; do [ -f "$m" ] || die "no model file '$m'"; done

"$fluoro" info --system --json >"${TMPDIR:-/tmp}/fluoro-system.$$.json"
system_json="${TMPDIR:-/tmp}/fluoro-system.$$.json"
trap 'rm -f "$system_json"' EXIT
[ -n "$threads" ] || threads=$("$py" -c \
    'import json, sys; print(json.load(open(sys.argv[1]))["default_threads"])' "$system_json")
out=${out:-"$FLUORO_ROOT/build/bench-peer/$(date +%Y%m%d-%H%M%S)-t$threads"}
mkdir -p "$out"
: >"$out/runs.jsonl"
rm -f "$out/skipped.txt"

# --- what was measured, on what ----------------------------------------------------------------
commit=$(git -C "$FLUORO_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$( (git -C "$FLUORO_ROOT" status --porcelain 2>/dev/null || true) | awk '{print $2}' |
    tr '\n' ' ')
M_COMMAND=$args_line M_COMMIT=$commit M_DIRTY=$dirty M_BIN=$fluoro M_NOTE=$note M_THREADS=$threads \
M_RUNS=$runs M_REPS=$reps M_FLASH=$flash M_P=$n_prompt M_N=$n_gen M_D=$depth M_PEER=$peer \
    "$py" - "$out/meta.json" "$system_json" <<'PY'
import datetime, json, os, sys
e = os.environ
s = json.load(open(sys.argv[2]))
dirty = e["M_DIRTY"].split()
json.dump({
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    "command": e["M_COMMAND"].strip(),
    "commit": e["M_COMMIT"],
    "tree": ("uncommitted changes in " + str(len(dirty)) + " paths: " + " ".join(dirty[:12])
             + (" ..." if len(dirty) > 12 else "")) if dirty else "clean",
    "fluoro_bin": e["M_BIN"], "note": e["M_NOTE"],
    "threads": int(e["M_THREADS"]), "runs": int(e["M_RUNS"]), "reps": int(e["M_REPS"]),
    "flash_attn": e["M_FLASH"] == "1",
    "peer": e["M_PEER"],
    "n_prompt": int(e["M_P"]), "n_gen": int(e["M_N"]), "depth": int(e["M_D"]),
    "machine": {"cpu": s["cpu"], "logical_cpus": s["logical_cpus"],
                "physical_cores": s["physical_cores"], "usable_cpus": s["usable_cpus"],
                "memory_gib": s["memory_bytes"] / 2**30,
                "isa": " ".join(k for k, v in s["isa"].items() if v) or "none detected",
                "caches": s["caches"], "kernel_isa": s["kernel_isa"]},
}, open(sys.argv[1], "w"), indent=2)
PY

echo "measuring memory bandwidth (fluoro_membw --threads $threads ${membw_args[*]})..." >&2
"$membw" --threads "$threads" "${membw_args[@]}" --json >"$out/membw.json"

# record ENGINE MODEL RUN LOAD RESULT_FILE|"" [RC]: appends one line to runs.jsonl and prints the
# tok/s; an empty RESULT_FILE records a failed run of $test_args with its exit status.
record() {
    TEST_ARGS=$test_args "$py" - "$@" "$out/runs.jsonl" <<'PY'
import json, os, sys
engine, model, run, load, path = sys.argv[1:6]
rc, jsonl = (sys.argv[6], sys.argv[7]) if len(sys.argv) == 8 else (None, sys.argv[6])
line = {"engine": engine, "model": model, "run": int(run), "loadavg": float(load)}
if path:
    line["result"] = json.load(open(path))
    print(" ".join(f"{r['test']} {r['mean_tps']:.2f}" for r in line["result"]["results"]), end="")
else:
    line["failed"] = int(rc)
    line["test_args"] = os.environ["TEST_ARGS"]
    print(f"FAILED (exit {rc}{', timed out' if rc == '124' else ''})", end="")
with open(jsonl, "a") as f:
    f.write(json.dumps(line) + "\n")
PY
}

# measure ENGINE MODEL RUN CMD...: runs CMD under the time limit, output to $tmp, and records it;
# a run that fails or hangs is recorded as failed and tried once more. Sets measured_ok to 1 when
# a try succeeded, 0 when both failed.
measure() {
    local engine=$1 model=$2 run=$3 load rc
    shift 3
    measured_ok=0
    for attempt in 1 2; do
        load=$(loadavg)
        rc=0
        timeout "$run_timeout" "$@" >"$tmp" || rc=$?
        if [ "$rc" = 0 ]; then
            record "$engine" "$model" "$run" "$load" "$tmp" >&2
            measured_ok=1
            return
        fi
        record "$engine" "$model" "$run" "$load" "" "$rc" >&2
        if [ "$attempt" = 1 ]; then printf ', again: ' >&2; fi
    done
}

loadavg() { cut -d' ' -f1 /proc/loadavg; }
tmp="$out/last.json"
tests=("$n_prompt 0 0" "0 $n_gen 0" "0 $n_gen $depth")
if [ -n "$depths" ]; then
    tests=("$n_prompt 0 0")
    IFS=, read -r -a depth_list <<<"$depths"
    for d in "${depth_list[@]}"; do
        [[ "$d" =~ ^[0-9]+$ ]] || die "--depths: '$d' is not a token count"
        tests+=("0 $n_gen $d")
    done
fi
flash_arg=()
[ "$flash" = 1 ] && flash_arg=(--flash-attn)
for model in "${models[@]}"; do
    name=$(basename "$model")
    "$fluoro" info "$model" --json >"$out/info-$name.json"
    n_ctx_train=$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["hparams"][
        "context_length"])' "$out/info-$name.json")
    for t in "${tests[@]}"; do
        read -r p n d <<<"$t"
        if [ $((d + n)) -gt "$n_ctx_train" ]; then
            echo "$name tg$n@d$d (trained context $n_ctx_train)" >>"$out/skipped.txt"
            echo "$name: depth $d + $n generated tokens is past its trained context ($n_ctx_train):" \
                "skipped" >&2
            continue
        fi
        test_args="-p $p -n $n -d $d"
        peer_args=("$model" -p "$p" -n "$n" -d "$d" -r "$reps" -t "$threads" "${flash_arg[@]}")
        peer_cmd=("$py" "$FLUORO_ROOT/scripts/peer/llamacpp_bench.py")
        [ "$peer" = llama-bench ] &&
            peer_cmd=("$py" "$FLUORO_ROOT/scripts/peer/llama_bench_json.py" "$llama_bench")
        amx_crashed=0  # the AMX build failed both tries of a run of this test: not tried again
        for ((run = 1; run <= runs; run++)); do
            printf '%s p=%s n=%s d=%s run %d/%d: fluoro ' "$name" "$p" "$n" "$d" "$run" "$runs" >&2
            measure fluoro "$model" "$run" \
                "$fluoro" bench "$model" -p "$p" -n "$n" -d "$d" -r "$reps" -t "$threads" --json
            if [ "$amx_crashed" = 0 ]; then
                printf ' | llama.cpp ' >&2
                measure llama.cpp "$model" "$run" "${peer_cmd[@]}" "${peer_args[@]}"
                [ "$measured_ok" = 1 ] || [ "$amx_off_peer" != yes ] || amx_crashed=1
            fi
            # The AMX-off build: where the AMX build fails, and for plain decode (what AMX is
            # worth to llama.cpp there).
            if [ "$amx_off_peer" = yes ] && { [ "$amx_crashed" = 1 ] ||
                { [ "$p" = 0 ] && [ "$d" = 0 ]; }; }; then
                printf ' | llama.cpp AMX off ' >&2
                measure llama.cpp-amx-off "$model" "$run" env PYTHONPATH="$amx_off_dir" \
                    "$py" "$FLUORO_ROOT/scripts/peer/llamacpp_bench.py" "${peer_args[@]}"
            fi
            echo " tok/s" >&2
        done
    done
done
rm -f "$tmp"

# Again at the end: the machine's bandwidth moves over a run (16.7 to 22.4 GB/s here in one day);
# the roofline takes the higher figure, so a slow start cannot put a test above its floor.
echo "measuring memory bandwidth again..." >&2
"$membw" --threads "$threads" "${membw_args[@]}" --json >"$out/membw-end.json"

"$py" "$FLUORO_ROOT/scripts/peer/report.py" "$out"
echo "results: $out (report.md: its ratios go into docs/PERFORMANCE.md, the report into docs/history/)" >&2
