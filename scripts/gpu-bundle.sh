#!/usr/bin/env bash
# Builds what scripts/gpu-check.sh runs, on a CPU machine with the CUDA toolkit, into one folder
# that can be copied to a GPU machine lacking the build's libraries (GTest, nlohmann_json, PCRE2,
# SQLite dev packages): the binaries, the shared libraries they need beyond glibc and CUDA, and
# small slices of the default models (fluoro_gguf_reshape: the first layers, a truncated
# vocabulary — real weights, every tensor type) when the whole files are too large to copy.
#   usage: scripts/gpu-bundle.sh OUT-DIR [build-dir]   (default build-dir: build/gpu)
# On the GPU machine: OUT-DIR/run.sh (calls scripts/gpu-check.sh with FLUORO_GPU_PREBUILT=1).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:?usage: gpu-bundle.sh OUT-DIR [build-dir]}"
build="${2:-$root/build/gpu}"
models="${FLUORO_MODELS_DIR:-$root/models}"

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DFLUORO_CUDA=ON -DFLUORO_GUI=OFF \
    -G Ninja >/dev/null
cmake --build "$build" -j"$(nproc)" --target fluoro_cuda_tests fluoro fluoro_gguf_reshape \
    fluoro_cuda_gemv_bench fluoro_cuda_attention_bench

rm -rf "$dest"
mkdir -p "$dest/build/tests" "$dest/build/app" "$dest/lib" "$dest/models"
cp "$build"/tests/fluoro_cuda_tests "$build"/tests/fluoro_cuda_*_bench \
    "$build"/tests/fluoro_gguf_reshape "$dest/build/tests/"
cp "$build/app/fluoro" "$dest/build/app/"
strip "$dest"/build/tests/* "$dest"/build/app/fluoro
# Every shared library the binaries need but glibc, libstdc++/libgcc and CUDA's own (the GPU
# machine has those): SQLite, PCRE2, OpenSSL, zlib and what they pull in.
ldd "$dest"/build/tests/* "$dest/build/app/fluoro" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
    grep -vE '^(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libcu[A-Za-z]*|ld-linux)[.-]' |
    sort -u | while read -r name path; do cp -L "$path" "$dest/lib/$name"; done
ls "$dest/lib"
# Slices: 4 of SmolLM2's 30 layers and the first 4096 tokens; 6 of Gemma 3's 18 layers (one
# global-attention layer) and the first 4096 tokens. Small enough (~37 MiB with the binaries)
# that the bundle and the repository together travel under a 64 MiB limit.
"$build/tests/fluoro_gguf_reshape" "$models/SmolLM2-135M-Instruct.Q4_1.gguf" \
    "$dest/models/smollm2-slice.gguf" --layers 4 --vocab 4096
"$build/tests/fluoro_gguf_reshape" "$models/gemma-3-270m-q4_k_m.gguf" \
    "$dest/models/gemma3-slice.gguf" --layers 6 --vocab 4096
# The binaries travel compressed (a fifth of their size); run.sh unpacks them.
tar -C "$dest" -cJf "$dest/bins.tar.xz" build lib
rm -rf "$dest/build" "$dest/lib"
cat >"$dest/run.sh" <<'RUN'
#!/usr/bin/env bash
# On the GPU machine, from the repository root: bash <bundle>/run.sh <bundle> [out-dir]
# Tests run on the slices; pp512/tg128 run on the slices inflated back to the real models'
# shapes and tensor types (same bytes per token, so the same speed; not the same outputs).
set -uo pipefail
bundle="$(cd "$1" && pwd)"
root="$(dirname "$bundle")"
b=/tmp/fluoro-gpu
rm -rf "$b" && mkdir -p "$b" && tar -C "$b" -xJf "$bundle/bins.tar.xz" && ln -s "$bundle/models" "$b/models"
export LD_LIBRARY_PATH="$b/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export FLUORO_GPU_OUT="${2:-$b/out}"
mkdir -p "$FLUORO_GPU_OUT" /tmp/fluoro-bench-models
r="$b/build/tests/fluoro_gguf_reshape"
"$r" "$b/models/smollm2-slice.gguf" /tmp/fluoro-bench-models/smollm2-135m-shape.gguf --layers 30 --vocab 49152
"$r" "$b/models/gemma3-slice.gguf" /tmp/fluoro-bench-models/gemma3-270m-shape.gguf --layers 18 --vocab 262144
# The CPU side of the model tests reads dequantized copies (see tests/cuda/cuda_model_test.cpp).
"$r" "$b/models/smollm2-slice.gguf" /tmp/fluoro-bench-models/smollm2-slice-f32.gguf --dequantize
"$r" "$b/models/gemma3-slice.gguf" /tmp/fluoro-bench-models/gemma3-slice-f32.gguf --dequantize
FLUORO_GPU_PREBUILT=1 \
FLUORO_GPU_MODELS="$b/models/smollm2-slice.gguf=/tmp/fluoro-bench-models/smollm2-slice-f32.gguf:$b/models/gemma3-slice.gguf=/tmp/fluoro-bench-models/gemma3-slice-f32.gguf" \
FLUORO_GPU_BENCH_MODELS=/tmp/fluoro-bench-models/smollm2-135m-shape.gguf:/tmp/fluoro-bench-models/gemma3-270m-shape.gguf \
    bash "$root/scripts/gpu-check.sh" "$b/build"
RUN
chmod +x "$dest/run.sh"
du -sh "$dest"/* | sort -h
