// libFuzzer target for loading a model: any input must either load or fail with a fluoro::Error
// (the hyperparameter range checks, the weight binder's name, shape, finiteness and
// unused-tensor checks: engine/model/), and a model that loads must run one forward step of a
// token without a crash, sanitizer report or timeout. The seeds (gguf_fuzz_seeds) hold two tiny
// test models of real architectures (llama, gemma3), so mutations reach their metadata values and
// tensor directory - the hostile-file probes of issue 38 (a NaN or zero RoPE base, block_count
// one short, a NaN in a norm weight) are such mutations.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "gguf/gguf_file.h"
#include "kv/kv_cache.h"
#include "model/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static fluoro::cpu::CpuBackend backend(1);
    try {
        fluoro::gguf::GgufFile f =
            fluoro::gguf::GgufFile::parse({reinterpret_cast<const std::byte*>(data), size}, "fuzz");
        fluoro::ModelLoadOptions opt;
        opt.max_batch = 2;
        opt.max_logit_rows = 2;
        const auto model = fluoro::Model::load(std::move(f), backend, opt);
        const auto kv = model->create_kv(4, 1, fluoro::KvType::F16);
        const std::vector<int32_t> tokens = {0, int32_t(model->n_vocab() - 1)};
        const std::vector<int32_t> positions = {0, 1}, seqs = {0, 0}, rows = {1};
        fluoro::Batch b{tokens, positions, seqs, rows};
        const std::span<const float> logits = model->forward(b, *kv);
        if (logits.size() != size_t(model->n_vocab())) __builtin_trap();
    } catch (const fluoro::Error&) {
    }
    return 0;
}
