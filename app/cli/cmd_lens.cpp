// `fluoro lens MODEL --prompt TEXT`: the logit lens (decode/logit_lens.h) of a prompt (plain text,
// no chat template): at one position (default: the last token, i.e. the prediction of what comes
// next), the model's top tokens after each layer, the entropy, and the rank and probability of a
// target token — the next prompt token when the position has one, else the model's own final
// prediction — so one reads at which layer the answer forms. --overview adds every layer x head's
// attention pattern at that position (runtime/attention_overview.h), as a letter grid, and what
// each request cost against one plain pass of the position. A table or --json.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "common/format.h"
#include "core/error.h"
#include "decode/logit_lens.h"
#include "decode/position_rerun.h"
#include "decode/sequence.h"
#include "runtime/attention_overview.h"

namespace fluoro::cli {
namespace {

struct LensOpts {
    std::string model, prompt;
    int64_t at = -1;  // position; -1: the last
    int32_t top_k = 5;
    bool json = false, overview = false;
    EngineFlags engine;
};

std::string shown(const std::string& piece) {
    return "'" + app::table_cell_text(piece) + "'";
}

void run_lens(const LensOpts& o) {
    if (o.prompt.empty()) throw Error("--prompt must not be empty");
    if (o.top_k < 1 || o.top_k > 100) throw Error("--top-k must be in 1..100");
    app::EngineSettings s = o.engine.settings();
    if (s.backend != BackendKind::Cpu)
        throw Error("the logit lens runs on the CPU backend only (--backend cpu)");
    app::LoadedModel m = app::load_model(o.model, s);
    const tok::Tokenizer& tk = m.model->tokenizer();
    const std::vector<int32_t> tokens = tk.encode(o.prompt, true, false);
    const int64_t n = int64_t(tokens.size());
    if (n > m.ctx)
        throw Error("the prompt has " + std::to_string(n) + " tokens, more than the context of " +
                    std::to_string(m.ctx) + " (raise --ctx)");
    const int64_t at = o.at < 0 ? n - 1 : o.at;
    if (at >= n)
        throw Error("--at " + std::to_string(o.at) + " is past the prompt's " + std::to_string(n) +
                    " tokens");
    Sequence seq(*m.model, *m.kv, 0);
    const std::span<const float> last = seq.prefill(tokens);
    // The target: the prompt's next token, or (at the last position) the model's prediction.
    const int32_t target = at + 1 < n ? tokens[size_t(at + 1)] : dist_top(last, 1, -1).top[0].id;
    LensRequest r;
    r.slot = at;
    r.token = tokens[size_t(at)];
    r.target = target;
    r.top_k = o.top_k;
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<DistTop> lens = logit_lens(*m.model, *m.kv, r);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

    nlohmann::json j = {{"model", o.model},
                        {"arch", m.model->hparams().arch},
                        {"n_tokens", n},
                        {"position", at},
                        {"token", tk.token_to_piece(r.token, true)},
                        {"target", tk.token_to_piece(target, true)},
                        {"target_is", at + 1 < n ? "the next prompt token" : "the model's output"},
                        {"ms", ms},
                        {"layers", nlohmann::json::array()}};
    for (size_t il = 0; il < lens.size(); ++il) {
        nlohmann::json top = nlohmann::json::array();
        for (const TokenProb& p : lens[il].top)
            top.push_back({{"id", p.id},
                           {"piece", tk.token_to_piece(p.id, true)},
                           {"p", std::exp(double(p.logprob))}});
        j["layers"].push_back({{"layer", il + 1},
                               {"entropy", lens[il].entropy},
                               {"target_rank", lens[il].target_rank},
                               {"target_p", std::exp(double(lens[il].target_logprob))},
                               {"top", top}});
    }
    AttentionOverview ov;
    if (o.overview) {
        fill_attention_overview(*m.model, *m.backend, *m.kv, 0, at, tokens, ov);
        // One plain pass of the position, for scale: what a decode step of it costs.
        PositionRerun rerun(*m.model, *m.kv, 0, at, tokens[size_t(at)]);
        const auto p0 = std::chrono::steady_clock::now();
        rerun.run();
        const double pass_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - p0)
                .count();
        nlohmann::json heads = nlohmann::json::array();
        for (int32_t il = 0; il < ov.n_layer; ++il)
            for (int32_t h = 0; h < ov.n_head; ++h) {
                const HeadPattern& p = ov.head(il, h);
                heads.push_back({{"layer", il},
                                 {"head", h},
                                 {"label", attention_pattern_name(p.label)},
                                 {"entropy", p.entropy},
                                 {"sink", p.sink},
                                 {"self", p.self},
                                 {"previous", p.previous},
                                 {"local", p.local},
                                 {"induction", p.induction},
                                 {"max_key", p.max_key}});
            }
        j["overview"] = {{"ms", ov.ms}, {"plain_pass_ms", pass_ms}, {"heads", heads}};
    }
    if (o.json) {
        std::cout << j.dump(2) << '\n';
        return;
    }
    std::printf(
        "%s (%s), %lld tokens; logit lens at position %lld %s: after each layer, the top "
        "%d and the rank and p of %s (%s); %.1f ms\n",
        o.model.c_str(), j["arch"].get<std::string>().c_str(), static_cast<long long>(n),
        static_cast<long long>(at), shown(j["token"].get<std::string>()).c_str(), o.top_k,
        shown(j["target"].get<std::string>()).c_str(), j["target_is"].get<std::string>().c_str(),
        ms);
    std::printf(
        "| layer | entropy | target rank | target p | top |\n| --- | --- | --- | --- | --- |\n");
    for (const auto& l : j["layers"]) {
        std::string top;
        for (const auto& t : l["top"]) {
            char buf[32];
            std::snprintf(buf, sizeof buf, " %.3f", t["p"].get<double>());
            top += (top.empty() ? "" : ", ") + shown(t["piece"].get<std::string>()) + buf;
        }
        std::printf("| %d | %.2f | %lld | %.4f | %s |\n", l["layer"].get<int>(),
                    l["entropy"].get<double>(),
                    static_cast<long long>(l["target_rank"].get<int64_t>()),
                    l["target_p"].get<double>(), top.c_str());
    }
    if (!o.overview) return;
    std::printf(
        "\nattention overview at position %lld (%lld keys), one letter per head: "
        "I induction, P previous token, O own token, S sinks, L local, D diffuse, M "
        "mixed; %.1f ms (one plain pass of the position: %.1f ms)\n",
        static_cast<long long>(at), static_cast<long long>(at + 1), ov.ms,
        j["overview"]["plain_pass_ms"].get<double>());
    const char* letters = "IPOSLDM";
    for (int32_t il = 0; il < ov.n_layer; ++il) {
        std::string row;
        for (int32_t h = 0; h < ov.n_head; ++h) row += letters[int(ov.head(il, h).label)];
        std::printf("layer %3d  %s\n", il, row.c_str());
    }
}

}  // namespace

void add_lens_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "lens", "Logit lens: a prompt position's top predictions after each layer");
    auto o = std::make_shared<LensOpts>();
    cmd->add_option("model", o->model, "GGUF model file")->required();
    cmd->add_option("-p,--prompt", o->prompt, "Prompt text (no chat template)")->required();
    cmd->add_option("--at", o->at, "Token position to look at (default: the last)");
    cmd->add_option("--top-k", o->top_k, "Top tokens per layer (1..100)")->capture_default_str();
    cmd->add_flag("--overview", o->overview,
                  "Also every layer x head's attention pattern at the position, and the costs");
    cmd->add_flag("--json", o->json, "Print JSON");
    o->engine.add_to(*cmd);
    cmd->callback([o] { run_lens(*o); });
}

}  // namespace fluoro::cli
