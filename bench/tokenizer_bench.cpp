// Tokenizer encode throughput (bytes/s) on ~100 KB of mixed text (English prose, code, numbers,
// Cyrillic, CJK, emoji, whitespace runs) with the default models' vocabularies, SmolLM2 (byte-level
// BPE, smollm pre-tokenizer) and Gemma 3 (SentencePiece), and, when fetched
// (scripts/fetch-llama-cpp-source.sh), llama.cpp's llama-bpe, qwen2 and gemma-4 vocabularies.
// Models are looked up in $FLUORO_MODELS_DIR, else ./models. A missing file skips its benchmark.
//   build/release/bench/fluoro_tokenizer_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace fluoro::tok {
namespace {

std::filesystem::path models_dir() {
    const char* env = std::getenv("FLUORO_MODELS_DIR");
    return env ? env : "models";
}

const std::string& corpus() {
    static const std::string text = [] {
        const char* parts[] = {
            "The quick brown fox jumps over the lazy dog. It's 3:45 pm and we've got 1,234,567 "
            "reasons to test tokenizers, don't we? ",
            "int main(int argc, char** argv) {\n    for (int i = 0; i < argc; ++i) {\n        "
            "printf(\"%s\\n\", argv[i]);\n    }\n    return 0;\n}\n\n",
            "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82, \xd0\xbc\xd0\xb8\xd1\x80! ",
            "\xe6\x88\x91\xe6\x83\xb3\xe5\x9c\xa8"
            "apple\xe5\xb7\xa5\xe4\xbd\x9c"
            "1314151\xe5\xa4\xa9 ",
            "\xf0\x9f\x9a\x80 (normal) \xf0\x9f\x98\xb6\xe2\x80\x8d\xf0\x9f\x8c\xab\xef\xb8\x8f ",
            "   Hello\n\n\n    World\t\ttabs   and   spaces   ",
        };
        std::string t;
        while (t.size() < 100 * 1024)
            for (const char* p : parts) t += p;
        return t;
    }();
    return text;
}

void BM_Encode(benchmark::State& state, const std::string& file) {
    const std::filesystem::path path = models_dir() / file;
    if (!std::filesystem::exists(path)) {
        state.SkipWithError(("missing " + path.string()).c_str());
        return;
    }
    const auto gguf = gguf::GgufFile::open(path);
    const Tokenizer tok = Tokenizer::from_gguf(gguf);
    const std::string& text = corpus();
    size_t n_tokens = 0;
    for (auto _ : state) {
        const auto ids = tok.encode(text, false, false);
        n_tokens = ids.size();
        benchmark::DoNotOptimize(ids.data());
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
    state.counters["tokens"] = static_cast<double>(n_tokens);
}

BENCHMARK_CAPTURE(BM_Encode, SmolLM2, std::string("SmolLM2-135M-Instruct.Q4_1.gguf"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, Gemma3, std::string("gemma-3-270m-q4_k_m.gguf"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, LlamaBpe,
                  std::string("llama-cpp-python-0.3.36/vocab/ggml-vocab-llama-bpe.gguf"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, Qwen2,
                  std::string("llama-cpp-python-0.3.36/vocab/ggml-vocab-qwen2.gguf"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, Gemma4,
                  std::string("llama-cpp-python-0.3.36/vocab/ggml-vocab-gemma-4.gguf"))
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fluoro::tok

BENCHMARK_MAIN();
