// `fluoro eval fidelity MODEL --reference FILE`: how far this engine's next-token distributions
// are from the exact (float64) forward pass of the same file — KL divergence per position (mean,
// 99th percentile, max) and the share of positions with the same most likely token, as
// llama.cpp's `perplexity --kl-divergence` reports them — beside llama.cpp's own figures against
// the same reference when the file carries them (eval/fidelity.h, measure/fidelity_file.h).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "core/error.h"
#include "core/sha256.h"
#include "eval/window_logits.h"
#include "measure/eval_text.h"
#include "measure/fidelity_file.h"

namespace fluoro::cli {
namespace {

void print_row(const char* engine, const FidelityStats& s) {
    std::printf("%-10s %11.6f %11.6f %11.6f %9.2f %% %9.4f\n", engine, s.kld_mean, s.kld_p99,
                s.kld_max, 100.0 * s.top1, s.ppl);
}

// `--make-windows TEXT -o OUT`: the token windows fidelity_reference.py evaluates, as JSON
// {"n_ctx", "chunks", "model_file", "model_sha256", "text"}.
template <typename Opts>
void make_windows(const Opts& o) {
    if (o.out.empty()) throw Error("--make-windows needs -o FILE");
    const std::string text = app::read_eval_text(o.make_windows);
    app::EngineSettings s = o.engine.settings();
    app::LoadedModel m = app::load_model(o.model, s);
    const std::vector<int32_t> tokens = m.model->tokenizer().encode(text, false, false);
    const int64_t n_ctx = m.ctx;  // --ctx, capped at the model's trained context
    const auto windows = text_windows(*m.model, tokens, n_ctx, o.windows);
    if (windows.empty())
        throw Error("'" + o.make_windows + "' has " + std::to_string(tokens.size()) +
                    " tokens, fewer than one window of " + std::to_string(n_ctx));
    const nlohmann::json j = {{"n_ctx", n_ctx},
                              {"chunks", windows},
                              {"model_file", std::filesystem::path(o.model).filename().string()},
                              {"model_sha256", sha256_file_cached(o.model)},
                              {"text", o.make_windows}};
    std::ofstream out(o.out, std::ios::binary);
    if (!(out << j.dump() << '\n')) throw Error("cannot write '" + o.out + "'");
    std::fprintf(stderr, "wrote %s: %zu windows of %lld tokens (%zu scored positions)\n",
                 o.out.c_str(), windows.size(), static_cast<long long>(n_ctx),
                 windows.size() * size_t(n_ctx - 1 - n_ctx / 2));
}

}  // namespace

void add_eval_fidelity_command(CLI::App& eval) {
    auto* cmd = eval.add_subcommand(
        "fidelity",
        "KL divergence from the float64 reference forward pass, beside llama.cpp's (made with "
        "tests/reference/fidelity_reference.py)");
    struct Opts {
        std::string model, reference, make_windows, out;
        int64_t windows = 8;
        bool json = false, per_position = false;
        EngineFlags engine;
    };
    auto o = std::make_shared<Opts>();
    cmd->add_option("model", o->model, "GGUF model file")->required();
    cmd->add_option("--reference", o->reference,
                    "The reference file (tests/reference/fidelity_reference.py MODEL "
                    "tests/reference/fixtures/fidelity_<model>.json OUT)");
    cmd->add_option("--make-windows", o->make_windows,
                    "Instead of measuring: cut this UTF-8 text into token windows of --ctx "
                    "tokens for fidelity_reference.py, written to --out as JSON");
    cmd->add_option("--windows", o->windows, "With --make-windows: at most this many windows")
        ->capture_default_str();
    cmd->add_option("-o,--out", o->out, "With --make-windows: the JSON file to write");
    cmd->add_flag("--json", o->json, "Print the result as JSON");
    cmd->add_flag("--per-position", o->per_position,
                  "With --json: also each scored position's KL divergence (fluoro.kld)");
    o->engine.engine.batch = 128;
    o->engine.engine.ctx = 512;
    o->engine.add_to(*cmd);
    cmd->callback([o] {
        if (!o->make_windows.empty()) return make_windows(*o);
        if (o->reference.empty())
            throw Error("eval fidelity needs --reference FILE (or --make-windows TEXT -o FILE)");
        const app::FidelityFile f = app::read_fidelity_file(o->reference);
        if (!f.model_sha256.empty()) {
            const std::string sha = sha256_file_cached(o->model);
            if (sha != f.model_sha256)
                throw Error("'" + o->reference + "' was made for " + f.model_file + " (sha256 " +
                            f.model_sha256 + "), not '" + o->model + "' (sha256 " + sha + ")");
        }
        app::EngineSettings s = o->engine.settings();
        s.ctx = f.ref.n_ctx;
        s.logit_rows = s.batch;  // every scored position needs its logits
        app::LoadedModel m = app::load_model(o->model, s);
        std::fprintf(stderr, "%zu windows of %lld tokens, positions %lld..%lld scored\n",
                     f.ref.windows.size(), static_cast<long long>(f.ref.n_ctx),
                     static_cast<long long>(f.ref.first_scored),
                     static_cast<long long>(f.ref.n_ctx - 2));
        const FidelityStats r = fidelity(*m.model, *m.kv, f.ref, [](int64_t w, double kld) {
            std::fprintf(stderr, "[%lld] mean KLD %.6f\n", static_cast<long long>(w + 1), kld);
        });
        if (o->json) {
            nlohmann::json j = app::fidelity_json(r, f);
            j["model"] = o->model;
            j["reference_file"] = o->reference;
            j["threads"] = m.backend->threads();
            j["kv_type"] = kv_types_name(s.kv_type);
            if (o->per_position) j["fluoro"]["kld"] = r.kld;
            std::cout << j.dump(2) << '\n';
            return;
        }
        std::printf(
            "%s against its float64 forward pass: %lld positions (%zu windows of %lld, "
            "second half scored), %.1f s\n\n",
            o->model.c_str(), static_cast<long long>(r.tokens), f.ref.windows.size(),
            static_cast<long long>(f.ref.n_ctx), r.ms / 1000.0);
        std::printf("%-10s %11s %11s %11s %11s %9s\n", "engine", "KLD mean", "KLD p99", "KLD max",
                    "same top", "PPL");
        print_row("fluoro", r);
        if (f.llama_cpp) print_row("llama.cpp", *f.llama_cpp);
        std::printf("%-10s %11s %11s %11s %11s %9.4f\n", "reference", "", "", "", "",
                    r.ppl_reference);
        if (f.llama_cpp)
            std::printf(
                "\nllama.cpp: llama-cpp-python %s (%s), measured against the same "
                "reference by tests/reference/make_fidelity_fixtures.py\n",
                f.llama_cpp_version.c_str(), f.llama_cpp_settings.c_str());
    });
}

}  // namespace fluoro::cli
