#include "model/architecture.h"

#include <cmath>
#include <span>
#include <string_view>

#include "core/error.h"
#include "gguf/gguf_file.h"

namespace fluoro {

std::unique_ptr<Architecture> make_llama(const Hparams& hp);      // arch_llama.cpp
std::unique_ptr<Architecture> make_qwen2(const Hparams& hp);      // arch_qwen2.cpp
std::unique_ptr<Architecture> make_qwen3(const Hparams& hp);      // arch_qwen3.cpp
std::unique_ptr<Architecture> make_gemma3(const Hparams& hp);     // arch_gemma3.cpp
std::unique_ptr<Architecture> make_gemma2(const Hparams& hp);     // arch_gemma3.cpp
std::unique_ptr<Architecture> make_granite(const Hparams& hp);    // arch_granite.cpp
std::unique_ptr<Architecture> make_olmo2(const Hparams& hp);      // arch_olmo2.cpp
std::unique_ptr<Architecture> make_phi3(const Hparams& hp);       // arch_phi3.cpp
std::unique_ptr<Architecture> make_qwen3moe(const Hparams& hp);   // arch_moe.cpp
std::unique_ptr<Architecture> make_olmoe(const Hparams& hp);      // arch_moe.cpp
std::unique_ptr<Architecture> make_smollm3(const Hparams& hp);    // arch_smollm3.cpp
std::unique_ptr<Architecture> make_mistral3(const Hparams& hp);   // arch_mistral3.cpp
std::unique_ptr<Architecture> make_gpt_oss(const Hparams& hp);    // arch_gpt_oss.cpp
std::unique_ptr<Architecture> make_deepseek2(const Hparams& hp);  // arch_deepseek2.cpp

namespace {

using Factory = std::unique_ptr<Architecture> (*)(const Hparams&);

// How the engine treats an `<arch>.*` metadata key it knows.
enum class KeyUse {
    Read,      // read by read_hparams and implemented
    NoEffect,  // informational: does not change the math (rope.scaling.finetuned, ...)
    ZeroOnly,  // accepted when 0 (expert_count: a dense model); anything else is refused
               // (an architecture's own list may instead Read it: its mixture-of-experts form)
};
struct KnownKey {
    std::string_view suffix;
    KeyUse use;
};

// The keys of every decoder here (hparams.cpp reads them).
constexpr KnownKey kDecoderKeys[] = {
    {"context_length", KeyUse::Read},
    {"embedding_length", KeyUse::Read},
    {"block_count", KeyUse::Read},
    {"feed_forward_length", KeyUse::Read},
    {"vocab_size", KeyUse::Read},
    {"attention.head_count", KeyUse::Read},
    {"attention.head_count_kv", KeyUse::Read},
    {"attention.key_length", KeyUse::Read},
    {"attention.value_length", KeyUse::Read},
    {"attention.layer_norm_rms_epsilon", KeyUse::Read},
    {"rope.dimension_count", KeyUse::Read},
    {"rope.freq_base", KeyUse::Read},
    {"rope.scaling.type", KeyUse::Read},
    {"rope.scaling.factor", KeyUse::Read},
    {"rope.scale_linear", KeyUse::Read},
    {"rope.scaling.attn_factor", KeyUse::Read},
    {"rope.scaling.original_context_length", KeyUse::Read},
    {"rope.scaling.yarn_ext_factor", KeyUse::Read},
    {"rope.scaling.yarn_beta_fast", KeyUse::Read},
    {"rope.scaling.yarn_beta_slow", KeyUse::Read},
    {"rope.scaling.finetuned", KeyUse::NoEffect},
    // The non-RMS norm epsilon some converters also write; these decoders only use RMSNorm.
    {"attention.layer_norm_epsilon", KeyUse::NoEffect},
    // Older converters' note of the source checkpoint's layout (the tensors are converted).
    {"tensor_data_layout", KeyUse::NoEffect},
    {"expert_count", KeyUse::ZeroOnly},
    {"expert_used_count", KeyUse::ZeroOnly},
};
constexpr KnownKey kGemma3Keys[] = {
    {"attention.sliding_window", KeyUse::Read},
    {"rope.freq_base_swa", KeyUse::Read},
    {"final_logit_softcapping", KeyUse::Read},
    {"attn_logit_softcapping", KeyUse::Read},
};

constexpr KnownKey kGraniteKeys[] = {
    {"embedding_scale", KeyUse::Read},
    {"residual_scale", KeyUse::Read},
    {"attention.scale", KeyUse::Read},
    {"logit_scale", KeyUse::Read},
};

// A mixture of experts (moe_ffn.h): how many experts, how many per token. llama reads them as
// Mixtral-style files do (a dense llama has none, or 0); qwen3moe also its experts' width.
constexpr KnownKey kMoeKeys[] = {
    {"expert_count", KeyUse::Read},
    {"expert_used_count", KeyUse::Read},
};
constexpr KnownKey kQwen3MoeKeys[] = {
    {"expert_count", KeyUse::Read},
    {"expert_used_count", KeyUse::Read},
    {"expert_feed_forward_length", KeyUse::Read},
};

// Phi's sliding window is accepted and not applied, as llama.cpp does (arch_phi3.cpp).
constexpr KnownKey kPhi3Keys[] = {
    {"attention.sliding_window", KeyUse::NoEffect},
};

// mistral3: llama 4's attention temperature and YaRN's log multiplier (the converter writes both
// for Ministral 3; llama.cpp reads the multiplier for mistral3 only).
constexpr KnownKey kMistral3Keys[] = {
    {"attention.temperature_scale", KeyUse::Read},
    {"rope.scaling.yarn_log_multiplier", KeyUse::Read},
};

// gpt-oss: its experts (and their width), the window of its even layers and their RoPE base.
constexpr KnownKey kGptOssKeys[] = {
    {"expert_count", KeyUse::Read},
    {"expert_used_count", KeyUse::Read},
    {"expert_feed_forward_length", KeyUse::Read},
    {"attention.sliding_window", KeyUse::Read},
    {"rope.freq_base_swa", KeyUse::Read},
};

// deepseek2: the latent attention's sizes, its mixture (shared experts, gating, weights, groups),
// the dense layers before it, and YaRN's log multiplier (DeepSeek's mscale_all_dim).
constexpr KnownKey kDeepseek2Keys[] = {
    {"expert_count", KeyUse::Read},
    {"expert_used_count", KeyUse::Read},
    {"expert_feed_forward_length", KeyUse::Read},
    {"expert_shared_count", KeyUse::Read},
    {"expert_weights_scale", KeyUse::Read},
    {"expert_weights_norm", KeyUse::Read},
    {"expert_gating_func", KeyUse::Read},
    {"expert_group_count", KeyUse::Read},
    {"expert_group_used_count", KeyUse::Read},
    {"leading_dense_block_count", KeyUse::Read},
    {"attention.q_lora_rank", KeyUse::Read},
    {"attention.kv_lora_rank", KeyUse::Read},
    {"attention.key_length_mla", KeyUse::Read},
    {"attention.value_length_mla", KeyUse::Read},
    {"rope.scaling.yarn_log_multiplier", KeyUse::Read},
};

// Every architecture the engine runs, by general.architecture: adding one is one line here (and
// its arch_*.cpp file), with the metadata keys it reads besides kDecoderKeys. The order is the
// order of the supported list in error messages.
struct Entry {
    const char* name;
    Factory make;
    std::span<const KnownKey> keys;
};
constexpr Entry kArchitectures[] = {
    {"llama", make_llama, kMoeKeys},
    {"qwen2", make_qwen2, {}},
    {"qwen3", make_qwen3, {}},
    {"gemma3", make_gemma3, kGemma3Keys},
    {"granite", make_granite, kGraniteKeys},
    {"olmo2", make_olmo2, {}},
    {"phi3", make_phi3, kPhi3Keys},
    {"gemma2", make_gemma2, kGemma3Keys},  // the same keys, read the same way
    {"qwen3moe", make_qwen3moe, kQwen3MoeKeys},
    {"olmoe", make_olmoe, kMoeKeys},
    {"smollm3", make_smollm3, {}},
    {"mistral3", make_mistral3, kMistral3Keys},
    {"gpt-oss", make_gpt_oss, kGptOssKeys},
    {"deepseek2", make_deepseek2, kDeepseek2Keys},
};

const Entry* find_entry(const std::string& arch) {
    for (const Entry& e : kArchitectures)
        if (arch == e.name) return &e;
    return nullptr;
}

const KnownKey* find_key(std::span<const KnownKey> keys, std::string_view suffix) {
    for (const KnownKey& k : keys)
        if (k.suffix == suffix) return &k;
    return nullptr;
}

}  // namespace

RopeParams decoder_rope(const Hparams& hp, RopeMode mode, const Weight* freq_factors) {
    RopeParams p;
    p.n_rot = int64_t(hp.n_rot);
    p.freq_base = hp.rope_freq_base;
    p.freq_scale = hp.rope_freq_scale;
    p.mode = mode;
    p.freq_factors = freq_factors;
    p.ext_factor = float(hp.yarn_ext_factor);
    p.attn_factor = float(hp.rope_attn_factor);
    // YaRN's magnitude (the kernels apply 1 + 0.1 ln s, s = 1 / freq_scale) divided by
    // 1 + 0.1 L ln s for a log multiplier L, as llama.cpp's context setup does (mscale 1,
    // mscale_all_dim L): Ministral 3's L = 1 leaves the rotations unscaled.
    if (hp.yarn_ext_factor != 0 && hp.yarn_log_mul != 0 && hp.rope_freq_scale < 1) {
        const double ln_s = std::log(1.0 / hp.rope_freq_scale);
        p.attn_factor = float(hp.rope_attn_factor / (1.0 + 0.1 * hp.yarn_log_mul * ln_s));
    }
    p.beta_fast = float(hp.yarn_beta_fast);
    p.beta_slow = float(hp.yarn_beta_slow);
    p.n_ctx_orig = int64_t(hp.rope_n_ctx_orig);
    return p;
}

const std::vector<std::string>& supported_architectures() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const Entry& e : kArchitectures) v.emplace_back(e.name);
        return v;
    }();
    return names;
}

std::unique_ptr<Architecture> make_architecture(const Hparams& hp) {
    if (const Entry* e = find_entry(hp.arch)) return e->make(hp);
    std::string list;
    for (const auto& a : supported_architectures()) list += (list.empty() ? "" : ", ") + a;
    throw UnsupportedError("architecture '" + hp.arch + "' is not supported (supported: " + list +
                           ")");
}

void check_metadata_keys(const gguf::GgufFile& file, const Hparams& hp) {
    const Entry* e = find_entry(hp.arch);
    if (!e) return;  // make_architecture refuses the architecture itself
    const std::string prefix = hp.arch + ".";
    for (const gguf::KeyValue& kv : file.metadata()) {
        if (!kv.key.starts_with(prefix)) continue;
        const std::string_view suffix = std::string_view(kv.key).substr(prefix.size());
        // The architecture's own list first: it may read what other decoders refuse.
        const KnownKey* k = find_key(e->keys, suffix);
        if (!k) k = find_key(kDecoderKeys, suffix);
        if (!k)
            throw UnsupportedError(file.name() + ": metadata key '" + kv.key +
                                   "' is not understood by the " + hp.arch +
                                   " architecture as this engine implements it; it may change "
                                   "the model's math, so the model is refused");
        if (k->use == KeyUse::ZeroOnly && file.get_uint(kv.key).value_or(1) != 0)
            throw UnsupportedError(file.name() + ": metadata key '" + kv.key + "' is " +
                                   kv.value.to_display() + ": only 0 is supported (" + hp.arch +
                                   " here is a dense model)");
    }
}

}  // namespace fluoro
