// `fluoro ppl MODEL FILE`: perplexity of a text file, computed as llama.cpp's perplexity tool
// does (independent chunks of --ctx tokens, second half of each scored; eval/perplexity.h).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "core/error.h"
#include "eval/perplexity.h"
#include "measure/measure_json.h"

namespace fluoro::cli {

void add_ppl_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("ppl", "Perplexity of a text file (llama.cpp's method)");
    struct Opts {
        std::string model, text;
        int64_t max_tokens = 0;
        int64_t chunks = 0;
        bool json = false;
        EngineFlags engine;
    };
    auto o = std::make_shared<Opts>();
    o->engine.engine.ctx = 512;
    o->engine.engine.batch = 128;
    cmd->add_option("model", o->model, "GGUF model file")->required();
    cmd->add_option("file", o->text, "UTF-8 text file")->required();
    cmd->add_option("--max-tokens", o->max_tokens,
                    "Use only the first N tokens of the text (0 = all)");
    cmd->add_option("--chunks", o->chunks, "Score at most N chunks (0 = all)");
    cmd->add_flag("--json", o->json,
                  "Print the result as JSON (the window's Measure menu stores the same)");
    o->engine.add_to(*cmd);
    cmd->callback([o] {
        std::ifstream in(o->text, std::ios::binary);
        if (!in) throw Error("cannot read '" + o->text + "'");
        std::stringstream ss;
        ss << in.rdbuf();
        app::EngineSettings s = o->engine.settings();
        s.logit_rows = s.batch;  // every scored position needs its logits
        app::LoadedModel m = app::load_model(o->model, s);
        std::vector<int32_t> tokens = m.model->tokenizer().encode(ss.str(), false, false);
        if (o->max_tokens > 0 && int64_t(tokens.size()) > o->max_tokens)
            tokens.resize(size_t(o->max_tokens));
        PerplexityOptions opt;
        opt.n_ctx = s.ctx;
        opt.max_chunks = o->chunks;
        std::fprintf(stderr, "%zu tokens, %lld-token chunks\n", tokens.size(),
                     static_cast<long long>(opt.n_ctx));
        const auto r = perplexity(*m.model, *m.kv, tokens, opt, [](int64_t c, double ppl) {
            std::fprintf(stderr, "[%lld]%.4f%s", static_cast<long long>(c + 1), ppl,
                         (c + 1) % 8 ? "," : "\n");
        });
        std::fprintf(stderr, "\n");
        if (o->json) {
            nlohmann::json j = app::perplexity_json(r, opt.n_ctx);
            j["model"] = o->model;
            j["text"] = o->text;
            j["text_tokens"] = int64_t(tokens.size());
            j["threads"] = m.backend->threads();
            std::cout << j.dump(2) << '\n';
            return;
        }
        std::printf("perplexity %.4f over %lld scored tokens in %lld chunks of %lld (%.1f s)\n",
                    r.ppl, static_cast<long long>(r.scored_tokens),
                    static_cast<long long>(r.chunks), static_cast<long long>(opt.n_ctx),
                    r.ms / 1000.0);
    });
}

}  // namespace fluoro::cli
