#include "model/hparams.h"

#include <array>
#include <cmath>
#include <string_view>

#include "core/error.h"
#include "gguf/gguf_file.h"

namespace fluoro {
namespace {

class KeyReader {
  public:
    KeyReader(const gguf::GgufFile& file, std::string arch) : file_(file), arch_(std::move(arch)) {}

    std::string key(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }
    uint64_t require_uint(std::string_view suffix) const {
        return nonzero(suffix, file_.require_uint(key(suffix)));
    }
    std::optional<uint64_t> uint(std::string_view suffix) const {
        return file_.get_uint(key(suffix));
    }
    std::optional<double> real(std::string_view suffix) const {
        return file_.get_float(key(suffix));
    }
    // A real that must be finite and > 0 when present.
    std::optional<double> positive_real(std::string_view suffix) const {
        const std::optional<double> v = real(suffix);
        if (v && !(std::isfinite(*v) && *v > 0))
            fail(suffix, "(" + std::to_string(*v) + ") must be a finite number above 0");
        return v;
    }
    std::optional<std::vector<uint64_t>> per_layer(std::string_view suffix, size_t n) const {
        return file_.get_uint_per_layer(key(suffix), n);
    }
    uint64_t nonzero(std::string_view suffix, uint64_t v) const {
        if (v == 0) fail(suffix, "is 0");
        return v;
    }
    [[noreturn]] void fail(std::string_view suffix, std::string_view what) const {
        throw FormatError(file_.name() + ": metadata key '" + key(suffix) + "' " +
                          std::string(what));
    }

  private:
    const gguf::GgufFile& file_;
    std::string arch_;
};

// Every per-layer entry must be set; head counts must divide evenly into query groups.
void check_heads(const KeyReader& r, const Hparams& hp) {
    for (uint64_t il = 0; il < hp.n_layer; ++il) {
        std::string layer = " for layer ";
        layer += std::to_string(il);
        if (hp.n_head[il] == 0) r.fail("attention.head_count", "is 0" + layer);
        if (hp.n_head_kv[il] == 0 || hp.n_head[il] % hp.n_head_kv[il] != 0) {
            std::string what = "(";
            what += std::to_string(hp.n_head_kv[il]);
            what += ") does not divide head_count (";
            what += std::to_string(hp.n_head[il]);
            what += ")";
            r.fail("attention.head_count_kv", what + layer);
        }
    }
}

uint64_t vocab_size(const gguf::GgufFile& file, const KeyReader& r) {
    if (auto v = r.uint("vocab_size")) return *v;
    if (const auto* tokens = file.find("tokenizer.ggml.tokens")) return tokens->array_size();
    return 0;
}

// rope.scaling.*: the kind (none, linear, yarn), its factor and YaRN's parameters. Every other
// kind (longrope, ...) and the YaRN keys not implemented here change the rotations: refused
// rather than run with the wrong ones. llama3's scaling comes as the rope_freqs tensor instead.
void read_rope_scaling(const gguf::GgufFile& file, const KeyReader& r, Hparams& hp) {
    hp.rope_freq_base_swa = r.positive_real("rope.freq_base_swa");
    hp.rope_scaling_type = file.get_string(r.key("rope.scaling.type")).value_or("");
    const std::string& type = hp.rope_scaling_type;
    if (!type.empty() && type != "none" && type != "linear" && type != "yarn")
        r.fail("rope.scaling.type",
               "is '" + type + "': only none, linear and yarn RoPE scaling are supported");
    std::optional<double> factor = r.positive_real("rope.scaling.factor");
    if (!factor) factor = r.positive_real("rope.scale_linear");  // the older key
    // Without a type the factor is linear scaling (llama.cpp reads it so); "none" ignores it.
    if (factor && type != "none") hp.rope_freq_scale = 1.0 / *factor;
    hp.rope_attn_factor = r.positive_real("rope.scaling.attn_factor").value_or(1.0);
    hp.rope_n_ctx_orig =
        r.nonzero("rope.scaling.original_context_length",
                  r.uint("rope.scaling.original_context_length").value_or(hp.n_ctx_train));
    if (file.find(r.key("rope.scaling.yarn_attn_factor")))
        r.fail("rope.scaling.yarn_attn_factor",
               "is present: this YaRN variant is not implemented here (it changes the "
               "rotations' magnitude), so the model is refused");
    // Read for every architecture; only mistral3's key list accepts it (check_metadata_keys
    // refuses it elsewhere, where llama.cpp would not read it).
    if (auto m = r.real("rope.scaling.yarn_log_multiplier")) {
        if (!(std::isfinite(*m) && *m >= 0 && *m <= 10))
            r.fail("rope.scaling.yarn_log_multiplier",
                   "(" + std::to_string(*m) + ") must be between 0 and 10");
        hp.yarn_log_mul = *m;
    }
    if (type == "yarn") {
        if (!factor) r.fail("rope.scaling.factor", "is missing (rope.scaling.type is 'yarn')");
        hp.yarn_ext_factor = 1.0;
        if (auto e = r.real("rope.scaling.yarn_ext_factor")) {
            if (!(std::isfinite(*e) && *e >= 0 && *e <= 1))
                r.fail("rope.scaling.yarn_ext_factor",
                       "(" + std::to_string(*e) + ") must be between 0 and 1");
            hp.yarn_ext_factor = *e;
        }
        hp.yarn_beta_fast = r.positive_real("rope.scaling.yarn_beta_fast").value_or(32.0);
        hp.yarn_beta_slow = r.positive_real("rope.scaling.yarn_beta_slow").value_or(1.0);
    } else {
        for (const char* key : {"rope.scaling.yarn_ext_factor", "rope.scaling.yarn_beta_fast",
                                "rope.scaling.yarn_beta_slow", "rope.scaling.yarn_log_multiplier"})
            if (file.find(r.key(key)))
                r.fail(key, "is present but rope.scaling.type is " +
                                (type.empty() ? std::string("absent") : "'" + type + "'") +
                                ", not 'yarn': the file contradicts itself");
    }
}

// expert_count / expert_used_count / expert_feed_forward_length: both counts 0 (absent) for a
// dense model; for a mixture, 1 <= used <= count. Whether the architecture runs experts at all is
// its own decision (check_metadata_keys refuses a nonzero count where it does not).
void read_experts(const KeyReader& r, Hparams& hp) {
    hp.n_expert = r.uint("expert_count").value_or(0);
    hp.n_expert_used = r.uint("expert_used_count").value_or(0);
    if (hp.n_expert > 4096) r.fail("expert_count", "is implausibly large");
    if (hp.n_expert_used > hp.n_expert)
        r.fail("expert_used_count", "(" + std::to_string(hp.n_expert_used) +
                                        ") exceeds expert_count (" + std::to_string(hp.n_expert) +
                                        ")");
    if (hp.n_expert > 0 && hp.n_expert_used == 0)
        r.fail("expert_used_count",
               "is missing or 0 while expert_count is " + std::to_string(hp.n_expert));
    if (const std::optional<uint64_t> ff = r.uint("expert_feed_forward_length"))
        hp.n_ff_exp = r.nonzero("expert_feed_forward_length", *ff);
}

// deepseek2's keys (Hparams): read wherever present; only deepseek2's key list accepts them.
void read_latent_attention(const gguf::GgufFile& file, const KeyReader& r, Hparams& hp) {
    hp.q_lora_rank = r.uint("attention.q_lora_rank").value_or(0);
    hp.kv_lora_rank = r.uint("attention.kv_lora_rank").value_or(0);
    const std::optional<uint64_t> k = r.uint("attention.key_length_mla"),
                                  v = r.uint("attention.value_length_mla");
    if (k.has_value() != v.has_value())
        r.fail(k ? "attention.value_length_mla" : "attention.key_length_mla",
               "is missing while its key/value counterpart is present");
    if (k) {
        hp.head_dim_k_mla = r.nonzero("attention.key_length_mla", *k);
        hp.head_dim_v_mla = r.nonzero("attention.value_length_mla", *v);
    }
    hp.n_layer_dense_lead = r.uint("leading_dense_block_count").value_or(0);
    hp.n_expert_shared = r.uint("expert_shared_count").value_or(0);
    if (auto s = r.real("expert_weights_scale")) {
        if (!(std::isfinite(*s) && *s >= 0))
            r.fail("expert_weights_scale", "(" + std::to_string(*s) + ") must be 0 or above");
        hp.expert_weights_scale = *s;
    }
    hp.expert_weights_norm = file.get_bool(r.key("expert_weights_norm")).value_or(false);
    hp.n_expert_groups = r.uint("expert_group_count").value_or(0);
    hp.n_group_used = r.uint("expert_group_used_count").value_or(0);
    if (hp.n_expert_groups > 1) {
        if (hp.n_expert % hp.n_expert_groups != 0)
            r.fail("expert_group_count", "(" + std::to_string(hp.n_expert_groups) +
                                             ") does not divide expert_count (" +
                                             std::to_string(hp.n_expert) + ")");
        if (hp.n_group_used == 0 || hp.n_group_used > hp.n_expert_groups)
            r.fail("expert_group_used_count", "(" + std::to_string(hp.n_group_used) +
                                                  ") must be 1 to expert_group_count (" +
                                                  std::to_string(hp.n_expert_groups) + ")");
        if (hp.n_group_used * (hp.n_expert / hp.n_expert_groups) < hp.n_expert_used)
            r.fail("expert_group_used_count",
                   "(" + std::to_string(hp.n_group_used) + ") leaves fewer experts than " +
                       "expert_used_count (" + std::to_string(hp.n_expert_used) + ")");
    }
    hp.expert_gating_func = r.uint("expert_gating_func").value_or(0);
    if (hp.expert_gating_func > 2)
        r.fail("expert_gating_func", "is " + std::to_string(hp.expert_gating_func) +
                                         ": only 1 (softmax) and 2 (sigmoid) are implemented");
}

}  // namespace

uint64_t Hparams::kv_bytes_per_token(uint64_t elem_bytes) const {
    uint64_t total = 0;
    for (uint64_t il = 0; il < n_layer; ++il) total += n_head_kv[il] * (head_dim_k + head_dim_v);
    return total * elem_bytes;
}

Hparams read_hparams(const gguf::GgufFile& file) {
    Hparams hp;
    hp.arch = file.require_string("general.architecture");
    const KeyReader r(file, hp.arch);
    hp.n_ctx_train = r.require_uint("context_length");
    hp.n_embd = r.require_uint("embedding_length");
    hp.n_layer = r.require_uint("block_count");
    if (hp.n_layer > 100000) r.fail("block_count", "is implausibly large");
    const size_t nl = static_cast<size_t>(hp.n_layer);
    auto heads = r.per_layer("attention.head_count", nl);
    if (!heads) r.fail("attention.head_count", "is missing");
    hp.n_head = *heads;
    hp.n_head_kv = r.per_layer("attention.head_count_kv", nl).value_or(hp.n_head);
    auto ff = r.per_layer("feed_forward_length", nl);
    if (!ff) r.fail("feed_forward_length", "is missing");
    hp.n_ff = *ff;
    check_heads(r, hp);
    const uint64_t default_head_dim = hp.n_embd / hp.n_head[0];
    hp.head_dim_k = r.nonzero("attention.key_length",
                              r.uint("attention.key_length").value_or(default_head_dim));
    hp.head_dim_v = r.nonzero("attention.value_length",
                              r.uint("attention.value_length").value_or(default_head_dim));
    hp.n_rot = r.uint("rope.dimension_count").value_or(hp.head_dim_k);
    if (hp.n_rot > hp.head_dim_k || hp.n_rot % 2 != 0)
        r.fail("rope.dimension_count", "(" + std::to_string(hp.n_rot) +
                                           ") must be even and at most the head size (" +
                                           std::to_string(hp.head_dim_k) + ")");
    // Each value range-checked against its meaning: a NaN, zero or negative base or factor
    // loads fine and then turns every rotation (and every logit) into garbage.
    hp.rope_freq_base = r.positive_real("rope.freq_base").value_or(10000.0);
    read_rope_scaling(file, r, hp);
    auto eps = r.positive_real("attention.layer_norm_rms_epsilon");
    if (!eps) r.fail("attention.layer_norm_rms_epsilon", "is missing");
    if (*eps >= 1.0)
        r.fail("attention.layer_norm_rms_epsilon",
               "(" + std::to_string(*eps) + ") is not a small positive number");
    hp.rms_eps = *eps;
    hp.n_vocab = vocab_size(file, r);
    hp.sliding_window = r.uint("attention.sliding_window").value_or(0);
    hp.rope_finetuned = file.get_bool(r.key("rope.scaling.finetuned")).value_or(true);
    hp.embedding_scale = r.positive_real("embedding_scale");
    hp.residual_scale = r.positive_real("residual_scale");
    hp.attention_scale = r.positive_real("attention.scale");
    hp.logit_scale = r.positive_real("logit_scale");
    if (auto c = r.positive_real("final_logit_softcapping")) hp.final_logit_softcap = c;
    if (auto c = r.positive_real("attn_logit_softcapping")) hp.attn_logit_softcap = c;
    if (auto t = r.real("attention.temperature_scale")) {
        if (!(std::isfinite(*t) && *t >= 0))
            r.fail("attention.temperature_scale",
                   "(" + std::to_string(*t) + ") must be a finite number, 0 or above");
        hp.attn_temp_scale = *t;
    }
    hp.file_type = file.get_uint("general.file_type");
    read_experts(r, hp);
    read_latent_attention(file, r, hp);
    return hp;
}

std::string file_type_name(uint64_t ftype) {
    // llama_ftype values (llama.h); gaps are removed or unused types.
    static constexpr std::array<std::pair<uint64_t, std::string_view>, 27> kNames{{
        {0, "F32"},      {1, "F16"},      {2, "Q4_0"},    {3, "Q4_1"},    {7, "Q8_0"},
        {8, "Q5_0"},     {9, "Q5_1"},     {10, "Q2_K"},   {11, "Q3_K_S"}, {12, "Q3_K_M"},
        {13, "Q3_K_L"},  {14, "Q4_K_S"},  {15, "Q4_K_M"}, {16, "Q5_K_S"}, {17, "Q5_K_M"},
        {18, "Q6_K"},    {19, "IQ2_XXS"}, {20, "IQ2_XS"}, {21, "Q2_K_S"}, {22, "IQ3_XS"},
        {23, "IQ3_XXS"}, {24, "IQ1_S"},   {25, "IQ4_NL"}, {26, "IQ3_S"},  {27, "IQ3_M"},
        {30, "IQ4_XS"},  {32, "BF16"},
    }};
    for (const auto& [v, name] : kNames)
        if (v == ftype) return std::string(name);
    return "ftype " + std::to_string(ftype);
}

}  // namespace fluoro
