// `fluoro attn MODEL --prompt TEXT`: runs a prompt (plain text, no chat template) and prints the
// attention sparsity of its last token per layer and query head — entropy, mass on the top-k
// keys, fraction of keys below a threshold, mass on the first 4 tokens — and, with --layer, the
// captured probability rows of that layer (one head with --head), as a table or --json.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "core/error.h"
#include "decode/sequence.h"

namespace fluoro::cli {
namespace {

struct AttnOpts {
    std::string model, prompt;
    int32_t layer = -1, head = -1;
    int64_t rows = 1;
    int32_t top_k = 8;
    float threshold = 1e-3f;
    bool json = false;
    EngineFlags engine;
};

// The last forward pass's readout of each layer (a prompt longer than a batch runs in several).
std::vector<LayerSparsity> last_per_layer(const std::vector<LayerSparsity>& all, size_t n_layer) {
    std::vector<LayerSparsity> out(n_layer);
    for (const LayerSparsity& l : all)
        if (l.layer >= 0 && size_t(l.layer) < n_layer) out[size_t(l.layer)] = l;
    return out;
}

nlohmann::json to_json(const AttnOpts& o, const app::LoadedModel& m,
                       const std::vector<int32_t>& tokens, const AttentionCapture& cap) {
    const tok::Tokenizer& tk = m.model->tokenizer();
    nlohmann::json j = {{"model", o.model},
                        {"arch", m.model->hparams().arch},
                        {"attention", attention_impl_name(m.backend->attention_impl())},
                        {"kv_type", kv_types_name(m.kv->shape().type)},
                        {"n_tokens", tokens.size()},
                        {"top_k", cap.top_k},
                        {"threshold", cap.threshold},
                        {"tokens", nlohmann::json::array()},
                        {"layers", nlohmann::json::array()},
                        {"rows", nlohmann::json::array()}};
    for (const int32_t id : tokens) j["tokens"].push_back(tk.token_to_piece(id, true));
    for (const LayerSparsity& l : last_per_layer(cap.sparsity, m.model->hparams().n_layer)) {
        nlohmann::json heads = nlohmann::json::array();
        for (size_t h = 0; h < l.heads.size(); ++h)
            heads.push_back({{"head", h},
                             {"entropy", l.heads[h].entropy},
                             {"top_k_mass", l.heads[h].top_k_mass},
                             {"below_threshold", l.heads[h].below_threshold},
                             {"sink_mass", l.heads[h].sink_mass}});
        j["layers"].push_back(
            {{"layer", l.layer}, {"query_pos", l.pos}, {"n_keys", l.n_keys}, {"heads", heads}});
    }
    const int64_t first_row = int64_t(tokens.size()) - (o.rows > 0 ? o.rows : 0);
    for (const CapturedAttentionRow& r : cap.rows)
        if (o.rows == 0 || r.pos >= first_row)
            j["rows"].push_back({{"layer", r.layer},
                                 {"head", r.head},
                                 {"query_pos", r.pos},
                                 {"key_begin", r.key_begin},
                                 {"weights", r.weights}});
    return j;
}

void print_table(const nlohmann::json& j) {
    std::printf("%s, %s attention, %zu tokens; last token's attention (top-%d mass, keys < %g)\n",
                j["model"].get<std::string>().c_str(), j["attention"].get<std::string>().c_str(),
                j["n_tokens"].get<size_t>(), j["top_k"].get<int>(), j["threshold"].get<double>());
    std::printf("| layer | head | keys | entropy | top-k mass | below thr | sink mass |\n");
    std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
    for (const auto& l : j["layers"])
        for (const auto& h : l["heads"])
            std::printf("| %d | %d | %lld | %.3f | %.3f | %.3f | %.3f |\n", l["layer"].get<int>(),
                        h["head"].get<int>(), static_cast<long long>(l["n_keys"].get<int64_t>()),
                        h["entropy"].get<double>(), h["top_k_mass"].get<double>(),
                        h["below_threshold"].get<double>(), h["sink_mass"].get<double>());
}

void run_attn(const AttnOpts& o) {
    if (o.prompt.empty()) throw Error("--prompt must not be empty");
    if (o.head >= 0 && o.layer < 0) throw Error("--head needs --layer");
    if (o.rows < 0) throw Error("--rows must be >= 0");
    app::EngineSettings s = o.engine.settings();
    app::LoadedModel m = app::load_model(o.model, s);
    const auto n_layer = int32_t(m.model->hparams().n_layer);
    if (o.layer >= n_layer)
        throw Error("--layer " + std::to_string(o.layer) + " is past the model's " +
                    std::to_string(n_layer) + " layers");
    const std::vector<int32_t> tokens = m.model->tokenizer().encode(o.prompt, true, false);
    if (int64_t(tokens.size()) > m.ctx)
        throw Error("the prompt has " + std::to_string(tokens.size()) +
                    " tokens, more than the context of " + std::to_string(m.ctx) +
                    " (raise --ctx)");
    AttentionCapture cap;
    cap.stats = true;
    cap.top_k = o.top_k;
    cap.threshold = o.threshold;
    if (o.layer >= 0) cap.regions.push_back({0, o.layer, o.head, o.rows, 0, 0});
    m.backend->set_attention_capture(&cap);
    Sequence seq(*m.model, *m.kv, 0);
    seq.prefill(tokens);
    m.backend->set_attention_capture(nullptr);
    const nlohmann::json j = to_json(o, m, tokens, cap);
    if (o.json)
        std::cout << j.dump(2) << '\n';
    else
        print_table(j);
}

}  // namespace

void add_attn_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "attn", "Attention sparsity per layer and head of a prompt's last token (and its rows)");
    auto o = std::make_shared<AttnOpts>();
    cmd->add_option("model", o->model, "GGUF model file")->required();
    cmd->add_option("-p,--prompt", o->prompt, "Prompt text (no chat template)")->required();
    cmd->add_option("--layer", o->layer, "Also print the attention rows of this layer");
    cmd->add_option("--head", o->head, "... of this query head only (default: every head)");
    cmd->add_option("--rows", o->rows, "Query rows to print: the last N tokens (0 = all)")
        ->capture_default_str();
    cmd->add_option("--top-k", o->top_k, "Keys counted in the top-k mass (0..64)")
        ->capture_default_str();
    cmd->add_option("--threshold", o->threshold, "Probability below which a key counts as unused")
        ->capture_default_str();
    cmd->add_flag("--json", o->json, "Print JSON");
    o->engine.add_to(*cmd);
    cmd->callback([o] { run_attn(*o); });
}

}  // namespace fluoro::cli
