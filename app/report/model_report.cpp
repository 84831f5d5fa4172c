#include "report/model_report.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>

#include "common/format.h"
#include "gguf/gguf_file.h"
#include "kv/paged_kv.h"
#include "model/architecture.h"
#include "model/attention_variant.h"
#include "model/model_summary.h"

namespace fluoro::app {
namespace {

using nlohmann::json;

// The attention as the engine runs it: query heads per KV head (MHA, GQA, MQA), which layers
// attend over a sliding window and over how many keys (the architecture's own rule, e.g.
// gpt-oss's even layers, Gemma 3's five of six), learned sink logits (attn_sinks tensors), and
// score soft-capping. Layer windows need the architecture: omitted for a file this engine cannot
// run (the report still describes it).
// The architecture the engine would run the file with (no weights bound), or nullptr for a file
// it cannot run: the report then describes the file alone.
std::unique_ptr<Architecture> architecture_of(const Hparams& hp) {
    try {
        return make_architecture(hp);
    } catch (const std::exception&) {
        return nullptr;
    }
}

// K and V elements one token stores in one layer of the architecture's KV cache (kv_shape(): a
// latent-attention model's on its default, absorbed path, where the values are the keys' latent
// dims and nothing more is stored, with the keys and values of one type).
uint64_t cached_elements(const KvShape& s, int64_t layer) {
    const int64_t v = s.values_in_keys() ? 0 : s.head_dim_v;
    return uint64_t(s.n_head_kv[size_t(layer)] * (s.head_dim_k + v));
}

json attention_json(const gguf::GgufFile& f, const Hparams& hp, const Architecture* arch) {
    json j;
    const uint64_t q = hp.n_head.empty() ? 0 : hp.n_head[0];
    const AttentionVariant v = attention_variant(hp);
    j["variant"] = v.name;
    j["query_heads_per_kv_head"] = v.q_per_kv;
    if (v.latent_rank > 0) {  // deepseek2: every head's key and value from one latent
        j["latent_rank"] = v.latent_rank;
        j["rope_dims"] = hp.n_rot;
        if (hp.q_lora_rank > 0) j["query_latent_rank"] = hp.q_lora_rank;
        // Per token and layer: the absorbed path's cached elements (the engine's default), and
        // what caching every head's key and value (the naive path, MHA) would take.
        const uint64_t k_head = hp.head_dim_k_mla ? hp.head_dim_k_mla : hp.head_dim_k;
        const uint64_t v_head = hp.head_dim_v_mla ? hp.head_dim_v_mla : hp.head_dim_v;
        if (arch && hp.n_layer > 0) j["cached_elements"] = cached_elements(arch->kv_shape(), 0);
        j["mha_elements"] = q * (k_head + v_head);
    }
    j["sinks"] = f.find_tensor("blk.0.attn_sinks.weight") != nullptr;
    if (hp.attn_logit_softcap) j["softcap"] = *hp.attn_logit_softcap;
    if (!arch) return j;
    try {
        json layers = json::array();
        int64_t window = 0;
        for (int64_t il = 0; il < int64_t(hp.n_layer); ++il)
            if (const int64_t w = arch->layer_window(il); w > 0) {
                layers.push_back(il);
                window = w;
            }
        if (!layers.empty()) {
            j["sliding_window"] = {{"keys", window}, {"layers", layers}};
            // One conversation's KV cache at the default context (4096 or the trained one,
            // F16, default batch and slack) storing every token, and with the window layers
            // keeping their window as `fluoro run` does by default (the window and `serve` add
            // a prefix cache's sequences to it).
            KvShape full = arch->kv_shape_with_windows();
            full.n_ctx = std::min<int64_t>(4096, int64_t(hp.n_ctx_train));
            full.type = KvType::F16;
            KvShape win = full;
            win.window_only = true;
            j["kv_at_context"] = {{"tokens", full.n_ctx},
                                  {"every_token_bytes", paged_kv_bytes(full)},
                                  {"window_only_bytes", paged_kv_bytes(win)}};
        }
    } catch (const std::exception&) {
    }
    return j;
}

json hparams_json(const Hparams& hp) {
    json j = {
        {"context_length", hp.n_ctx_train},
        {"embedding_length", hp.n_embd},
        {"block_count", hp.n_layer},
        {"head_count", hp.n_head},
        {"head_count_kv", hp.n_head_kv},
        {"feed_forward_length", hp.n_ff},
        {"head_dim_k", hp.head_dim_k},
        {"head_dim_v", hp.head_dim_v},
        {"rope_dimension_count", hp.n_rot},
        {"rope_freq_base", hp.rope_freq_base},
        {"rope_freq_scale", hp.rope_freq_scale},
        {"rms_eps", hp.rms_eps},
        {"vocab_size", hp.n_vocab},
        {"sliding_window", hp.sliding_window},
    };
    if (!hp.rope_scaling_type.empty()) j["rope_scaling_type"] = hp.rope_scaling_type;
    if (hp.yarn_log_mul != 0) j["rope_yarn_log_multiplier"] = hp.yarn_log_mul;
    if (hp.final_logit_softcap) j["final_logit_softcapping"] = *hp.final_logit_softcap;
    if (hp.attn_logit_softcap) j["attn_logit_softcapping"] = *hp.attn_logit_softcap;
    if (hp.n_expert > 0) {
        j["expert_count"] = hp.n_expert;
        j["expert_used_count"] = hp.n_expert_used;
        if (hp.n_ff_exp) j["expert_feed_forward_length"] = hp.n_ff_exp;
    }
    return j;
}

// Special tokens as the file declares them: role, id, and the token's text.
json special_tokens_json(const gguf::GgufFile& f) {
    static constexpr std::array<std::pair<const char*, const char*>, 9> kRoles{{
        {"bos", "tokenizer.ggml.bos_token_id"},
        {"eos", "tokenizer.ggml.eos_token_id"},
        {"eot", "tokenizer.ggml.eot_token_id"},
        {"eom", "tokenizer.ggml.eom_token_id"},
        {"unk", "tokenizer.ggml.unknown_token_id"},
        {"pad", "tokenizer.ggml.padding_token_id"},
        {"sep", "tokenizer.ggml.seperator_token_id"},
        {"cls", "tokenizer.ggml.cls_token_id"},
        {"mask", "tokenizer.ggml.mask_token_id"},
    }};
    const gguf::Value* tokens = f.find("tokenizer.ggml.tokens");
    const auto* texts =
        tokens ? std::get_if<std::vector<std::string>>(&tokens->storage()) : nullptr;
    json out = json::array();
    for (const auto& [role, key] : kRoles) {
        const auto id = f.get_uint(key);
        if (!id) continue;
        json t = {{"role", role}, {"id", *id}};
        if (texts && *id < texts->size())
            t["text"] = (*texts)[*id];
        else
            t["text"] = nullptr;  // id outside the vocabulary: shown, flagged by the tokenizer
        out.push_back(t);
    }
    return out;
}

json tokenizer_json(const gguf::GgufFile& f) {
    json j;
    j["model"] = f.get_string("tokenizer.ggml.model").value_or("none");
    j["pre"] = f.get_string("tokenizer.ggml.pre").value_or("");
    const gguf::Value* tokens = f.find("tokenizer.ggml.tokens");
    j["tokens"] = tokens ? tokens->array_size() : 0;
    const gguf::Value* merges = f.find("tokenizer.ggml.merges");
    j["merges"] = merges ? merges->array_size() : 0;
    uint64_t control = 0;
    if (const gguf::Value* types = f.find("tokenizer.ggml.token_type")) {
        if (const auto* v = std::get_if<std::vector<int64_t>>(&types->storage()))
            for (int64_t t : *v) control += (t == 3);
    }
    j["control_tokens"] = control;
    if (auto b = f.get_bool("tokenizer.ggml.add_bos_token")) j["add_bos"] = *b;
    if (auto b = f.get_bool("tokenizer.ggml.add_eos_token")) j["add_eos"] = *b;
    j["special"] = special_tokens_json(f);
    return j;
}

json tensors_json(const gguf::GgufFile& f) {
    json out = json::array();
    for (const auto& t : f.tensors()) {
        json shape = json::array();
        for (uint32_t d = 0; d < t.n_dims; ++d) shape.push_back(t.ne[d]);
        out.push_back({{"name", t.name},
                       {"type", type_name(t.type)},
                       {"shape", shape},
                       {"bytes", t.n_bytes},
                       {"offset", f.data_offset() + t.offset}});
    }
    return out;
}

}  // namespace

json model_report_json(const std::filesystem::path& model, const ReportOptions& opt) {
    const gguf::GgufFile f = gguf::GgufFile::open(model);
    const ModelSummary s = summarize_model(f);
    json j;
    j["file"] = model.string();
    j["file_bytes"] = s.file_bytes;
    j["gguf_version"] = f.version();
    j["alignment"] = f.alignment();
    j["name"] = s.name;
    j["architecture"] = s.hparams.arch;
    if (s.hparams.file_type) j["file_type"] = file_type_name(*s.hparams.file_type);
    j["hparams"] = hparams_json(s.hparams);
    j["tokenizer"] = tokenizer_json(f);
    j["chat_template"] = {{"name", s.chat_format.name()},
                          {"family", chat_template_name(s.chat_template.kind)},
                          {"source", s.chat_template.source}};
    if (!s.chat_format.note().empty()) j["chat_template"]["note"] = s.chat_format.note();
    j["params"] = s.n_params;
    if (s.hparams.n_expert > 0)
        j["experts"] = {{"total", s.hparams.n_expert},
                        {"active", s.hparams.n_expert_used},
                        {"active_params", s.n_params_active}};
    j["tensor_count"] = f.tensors().size();
    j["tensor_bytes"] = s.tensor_bytes;
    j["bits_per_weight"] = s.bits_per_weight();
    j["tied_output"] = s.tied_output;
    const std::unique_ptr<Architecture> arch = architecture_of(s.hparams);
    if (arch) {
        const KvShape kv = arch->kv_shape();
        uint64_t elements = 0;
        for (int64_t il = 0; il < kv.n_layer; ++il) elements += cached_elements(kv, il);
        j["kv_bytes_per_token_f16"] = elements * 2;
    } else {
        j["kv_bytes_per_token_f16"] = s.hparams.kv_bytes_per_token(2);
    }
    j["attention"] = attention_json(f, s.hparams, arch.get());
    json mix = json::array();
    for (const auto& [type, u] : s.type_mix)
        mix.push_back({{"type", type_name(type)},
                       {"tensors", u.tensors},
                       {"params", u.elements},
                       {"bytes", u.bytes}});
    j["type_mix"] = mix;
    if (opt.tensors) j["tensors"] = tensors_json(f);
    return j;
}

namespace {

// One line: "GQA (3 query heads per KV head) · sliding window of 512 keys on 15 of 18 layers
// (0, 1, 2, 3, …) · learned sink logit per head".
std::string attention_text(const json& a, const json& hp) {
    std::string out = a.value("variant", std::string("?"));
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%g", a.value("query_heads_per_kv_head", 0.0));
    if (out == "GQA") out += std::string(" (") + ratio + " query heads per KV head)";
    if (out == "MLA")
        out += " (latent " + a["latent_rank"].dump() + " + " + a["rope_dims"].dump() +
               " RoPE dims shared by " + std::string(ratio) + " query heads" +
               (a.contains("query_latent_rank")
                    ? "; queries through a latent of " + a["query_latent_rank"].dump()
                    : "") +
               (a.contains("cached_elements")
                    ? "; " + a["cached_elements"].dump() + " cached values per token and layer, " +
                          a["mha_elements"].dump() + " as MHA"
                    : "") +
               ")";
    if (a.contains("sliding_window")) {
        const json& w = a["sliding_window"];
        const json& list = w["layers"];
        std::string layers;
        for (size_t i = 0; i < list.size() && i < 6; ++i)
            layers += (i ? ", " : "") + list[i].dump();
        if (list.size() > 6) layers += ", …";
        const json& n = hp.value("block_count", json());
        out += " · sliding window of " + w["keys"].dump() + " keys on " +
               std::to_string(list.size()) + (n.is_number() ? " of " + n.dump() : "") +
               " layers (" + layers + ")";
    }
    if (a.value("sinks", false)) out += " · learned sink logit per head";
    if (a.contains("softcap")) out += " · scores soft-capped at " + a["softcap"].dump();
    return out;
}

}  // namespace

std::string model_report_text(const json& j) {
    std::ostringstream o;
    const json& hp = j["hparams"];
    const auto line = [&](const char* label, const std::string& value) {
        o << "  " << label << std::string(24 - std::min<size_t>(23, std::strlen(label)), ' ')
          << value << '\n';
    };
    const auto s = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
    o << j["file"].get<std::string>() << '\n';
    line("name", s(j["name"]));
    line("architecture", s(j["architecture"]));
    line("file type", j.contains("file_type") ? s(j["file_type"]) : "(not stated)");
    line("file size", format_bytes(j["file_bytes"]) + " (GGUF v" + s(j["gguf_version"]) + ")");
    line("parameters", format_count(j["params"]) + " (" + s(j["params"]) + ")");
    if (j.contains("experts")) {
        const json& e = j["experts"];
        line("experts", s(e["total"]) + ", " + s(e["active"]) +
                            " active per token: " + format_count(e["active_params"]) +
                            " parameters active (" + s(e["active_params"]) + ")");
    }
    char bpw[32];
    std::snprintf(bpw, sizeof bpw, "%.2f", j["bits_per_weight"].get<double>());
    line("tensor data", format_bytes(j["tensor_bytes"]) + ", " + bpw + " bits/weight, " +
                            s(j["tensor_count"]) + " tensors");
    line("output head", j["tied_output"].get<bool>() ? "tied to token_embd" : "output.weight");
    if (j.contains("attention")) line("attention", attention_text(j["attention"], hp));
    o << "hyperparameters\n";
    for (const auto& item : hp.items()) {
        // Per-layer arrays whose entries are all equal read better as one number.
        const json& value = item.value();
        const bool uniform =
            value.is_array() && !value.empty() &&
            std::all_of(value.begin(), value.end(), [&](const json& v) { return v == value[0]; });
        line(item.key().c_str(), uniform ? value[0].dump() + " (every layer)" : value.dump());
    }
    line("KV bytes / token (F16)",
         format_bytes(j["kv_bytes_per_token_f16"]) + " (" + s(j["kv_bytes_per_token_f16"]) + ")");
    if (const json& a = j["attention"]; a.contains("kv_at_context")) {
        const json& k = a["kv_at_context"];
        line(("KV at " + s(k["tokens"]) + " tokens (F16)").c_str(),
             format_bytes(k["window_only_bytes"]) +
                 " with the window layers keeping their window; " +
                 format_bytes(k["every_token_bytes"]) + " storing every token (--swa-full)");
    }
    const json& tok = j["tokenizer"];
    o << "tokenizer\n";
    line("model", s(tok["model"]) + (s(tok["pre"]).empty() ? "" : " (pre: " + s(tok["pre"]) + ")"));
    line("vocabulary", s(tok["tokens"]) + " tokens, " + s(tok["merges"]) + " merges, " +
                           s(tok["control_tokens"]) + " control");
    if (tok.contains("add_bos"))
        line("add BOS / EOS", s(tok["add_bos"]) + " / " + s(tok.value("add_eos", json(false))));
    for (const auto& t : tok["special"])
        line(("  " + s(t["role"])).c_str(),
             s(t["id"]) + "  " + (t["text"].is_null() ? "(out of range)" : t["text"].dump()));
    const json& ct = j["chat_template"];
    line("chat template", ct.contains("note")
                              ? s(ct["name"]) + " (" + s(ct["note"]) + ")"
                              : "the file's own (Jinja; " + s(ct["family"]) + " markup)");
    o << "tensor types\n";
    for (const auto& m : j["type_mix"])
        line(s(m["type"]).c_str(), s(m["tensors"]) + " tensors, " + format_count(m["params"]) +
                                       " params, " + format_bytes(m["bytes"]));
    if (j.contains("tensors")) {
        o << "tensors\n";
        for (const auto& t : j["tensors"]) {
            std::string shape;
            for (const auto& d : t["shape"]) shape += (shape.empty() ? "" : " x ") + d.dump();
            char buf[256];
            std::snprintf(buf, sizeof buf, "  %-32s %-6s %-16s %s\n", s(t["name"]).c_str(),
                          s(t["type"]).c_str(), shape.c_str(), format_bytes(t["bytes"]).c_str());
            o << buf;
        }
    }
    return o.str();
}

}  // namespace fluoro::app
