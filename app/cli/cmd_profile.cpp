// `fluoro profile MODEL`: where a token's time goes, against the machine's memory bandwidth —
// the "why is it slow" split. One prefill of --prompt-tokens and --decode-tokens decode steps
// (after a warm-up pass, so page faults and first touches are not counted), run through the
// profiling decorator (telemetry/profiling_backend.h), which times each operation category and
// counts the bytes it must read (each matmul's weights once per call, the KV rows attention
// reads) and the floating-point operations it does. Per phase and category: time per token,
// share of the step, MiB read per token, the GB/s that implies and its fraction of the measured
// read bandwidth (fluoro_membw with the same thread count, or --bandwidth), GFLOP/s; and the whole
// step against its roofline: bytes per token ÷ bandwidth is the fastest a token can be.
// A category's time includes its own overheads (thread wake-ups, activation quantization); the
// steps' wall time minus the categories is what lies outside the backend.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "backend/cpu/thread_pool.h"
#include "cli/commands.h"
#include "core/error.h"
#include "decode/sequence.h"
#include "model/model.h"
#include "session/backend_factory.h"
#include "telemetry/profiling_backend.h"

namespace fluoro::cli {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct ProfileOpts {
    std::string model;
    int threads = 0;
    int64_t prompt_tokens = 512, decode_tokens = 64;
    double bandwidth = 0;  // GB/s; 0: measure with fluoro_membw
    bool json = false;
};

// What one phase cost: wall time, and the decorator's per-category time, bytes and FLOPs.
struct PhaseCost {
    int64_t tokens = 0;
    double wall_s = 0;
    CategoryTimes ns{};
    ProfilingBackend::Traffic traffic{};
};

PhaseCost since(const ProfilingBackend& p, const CategoryTimes& ns0,
                const ProfilingBackend::Traffic& t0, double wall_s, int64_t tokens) {
    PhaseCost c;
    c.tokens = tokens;
    c.wall_s = wall_s;
    for (size_t i = 0; i < kTimeCategories; ++i) {
        c.ns[i] = p.totals()[i] - ns0[i];
        c.traffic.bytes[i] = p.traffic().bytes[i] - t0.bytes[i];
        c.traffic.flops[i] = p.traffic().flops[i] - t0.flops[i];
    }
    return c;
}

// The read bandwidth of fluoro_membw (built beside this binary: bench/, or installed next to it)
// with `threads` threads, in GB/s; 0 when it is not found or fails.
double measure_bandwidth(int threads) {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return 0;
    for (const std::filesystem::path& p :
         {self.parent_path() / "fluoro_membw",
          self.parent_path().parent_path() / "bench" / "fluoro_membw"}) {
        if (!std::filesystem::exists(p, ec)) continue;
        const std::string cmd = "'" + p.string() + "' --size-mib 512 --runs 5 --threads " +
                                std::to_string(threads) + " --json 2>/dev/null";
        FILE* pipe = popen(cmd.c_str(), "r");
        if (!pipe) return 0;
        std::string out;
        char buf[4096];
        while (const size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
        if (pclose(pipe) != 0) return 0;
        const json j = json::parse(out, nullptr, false);
        if (!j.is_object() || !j.contains("results")) return 0;
        for (const json& r : j["results"])
            if (r.value("kernel", "") == "read" && r.value("threads", 0) == threads)
                return r.value("best_gbs", 0.0);
    }
    return 0;
}

// memory_bound: the phase's floor is its bytes over the bandwidth (decode: one token per step);
// a prefill's is its arithmetic, so it gets no bandwidth roofline.
json phase_json(const PhaseCost& c, double bandwidth, bool memory_bound) {
    json cats = json::array();
    double bytes = 0, flops = 0, op_s = 0;
    const double n = double(std::max<int64_t>(1, c.tokens));
    for (size_t i = 0; i < kTimeCategories; ++i) {
        const double s = double(c.ns[i]) * 1e-9;
        bytes += c.traffic.bytes[i];
        flops += c.traffic.flops[i];
        op_s += s;
        if (c.ns[i] == 0 && c.traffic.bytes[i] == 0) continue;
        const double gbs = s > 0 ? c.traffic.bytes[i] / s * 1e-9 : 0;
        json row = {{"category", std::string(time_category_name(TimeCategory(i)))},
                    {"ms_per_token", s * 1e3 / n},
                    {"share", c.wall_s > 0 ? s / c.wall_s : 0},
                    {"mib_per_token", c.traffic.bytes[i] / n / (1 << 20)},
                    {"gb_per_s", gbs},
                    {"gflop_per_s", s > 0 ? c.traffic.flops[i] / s * 1e-9 : 0}};
        if (bandwidth > 0) row["of_bandwidth"] = gbs / bandwidth;
        cats.push_back(row);
    }
    json j = {{"tokens", c.tokens},
              {"ms_per_token", c.wall_s * 1e3 / n},
              {"tokens_per_s", c.wall_s > 0 ? double(c.tokens) / c.wall_s : 0},
              {"outside_backend_ms_per_token", std::max(0.0, c.wall_s - op_s) * 1e3 / n},
              {"mib_per_token", bytes / n / (1 << 20)},
              {"gflop_per_token", flops / n * 1e-9},
              {"categories", cats}};
    if (bandwidth > 0 && memory_bound) {
        // The fastest a token can be: its bytes read at the measured bandwidth.
        const double roofline_tps = bytes > 0 ? bandwidth * 1e9 / (bytes / n) : 0;
        j["roofline_tokens_per_s"] = roofline_tps;
        j["of_roofline"] = roofline_tps > 0 ? j["tokens_per_s"].get<double>() / roofline_tps : 0;
    }
    return j;
}

void print_phase(const std::string& name, const json& p) {
    std::printf(
        "\n%s: %lld tokens, %.3f ms/token (%.1f tok/s), %.2f MiB and %.3f GFLOP read/done "
        "per token",
        name.c_str(), static_cast<long long>(p["tokens"].get<int64_t>()),
        p["ms_per_token"].get<double>(), p["tokens_per_s"].get<double>(),
        p["mib_per_token"].get<double>(), p["gflop_per_token"].get<double>());
    if (p.contains("roofline_tokens_per_s"))
        std::printf("; roofline %.1f tok/s: %.1f %%", p["roofline_tokens_per_s"].get<double>(),
                    100 * p["of_roofline"].get<double>());
    std::printf("\n  %-10s %10s %7s %10s %9s %8s %10s\n", "category", "ms/token", "share",
                "MiB/token", "GB/s", "of bw", "GFLOP/s");
    for (const json& c : p["categories"]) {
        char bw[16] = "—";
        if (c.contains("of_bandwidth"))
            std::snprintf(bw, sizeof bw, "%.1f %%", 100 * c["of_bandwidth"].get<double>());
        std::printf("  %-10s %10.3f %6.1f%% %10.2f %9.2f %8s %10.2f\n",
                    c["category"].get<std::string>().c_str(), c["ms_per_token"].get<double>(),
                    100 * c["share"].get<double>(), c["mib_per_token"].get<double>(),
                    c["gb_per_s"].get<double>(), bw, c["gflop_per_s"].get<double>());
    }
    std::printf("  %-10s %10.3f   (the steps' wall time outside the backend's operations)\n",
                "outside", p["outside_backend_ms_per_token"].get<double>());
}

void run_profile(const ProfileOpts& o) {
    if (o.prompt_tokens < 2 || o.prompt_tokens > 8192)
        throw Error("--prompt-tokens must be 2..8192, not " + std::to_string(o.prompt_tokens));
    if (o.decode_tokens < 1 || o.decode_tokens > 4096)
        throw Error("--decode-tokens must be 1..4096, not " + std::to_string(o.decode_tokens));
    if (o.bandwidth < 0) throw Error("--bandwidth must be positive (GB/s)");
    const int threads = o.threads > 0 ? o.threads : cpu::ThreadPool::default_threads();
    const std::unique_ptr<Backend> cpu = app::make_backend(BackendKind::Cpu, threads);
    ProfilingBackend prof(*cpu);
    prof.set_timing(false);
    ModelLoadOptions lo;
    lo.max_batch = o.prompt_tokens;
    lo.max_logit_rows = 1;
    const std::unique_ptr<Model> model = Model::load(o.model, prof, lo);
    const int64_t ctx = o.prompt_tokens + o.decode_tokens + 1;
    if (ctx > int64_t(model->hparams().n_ctx_train))
        throw Error("--prompt-tokens + --decode-tokens (" + std::to_string(ctx - 1) +
                    ") is more than the model's context (" +
                    std::to_string(model->hparams().n_ctx_train) + ")");
    const std::unique_ptr<KvCache> kv = model->create_kv(ctx, 1, KvType::F16);
    // A prompt of ordinary text: this paragraph's tokens, repeated.
    const std::vector<int32_t> text = model->tokenizer().encode(
        "Where a token's time goes: the weights are read once per step, the keys and values of "
        "every earlier position once per layer, and what is left is arithmetic and overhead. ",
        false, false);
    std::vector<int32_t> prompt;
    while (int64_t(prompt.size()) < o.prompt_tokens)
        prompt.push_back(text[prompt.size() % text.size()]);

    Sequence seq(*model, *kv, 0);
    const auto argmax = [](std::span<const float> l) {
        return int32_t(std::max_element(l.begin(), l.end()) - l.begin());
    };
    // Warm-up: the first pass touches the pages of the weights, the KV pool and the scratch.
    seq.decode(argmax(seq.prefill(std::span(prompt).first(8))));
    seq.prefill(std::span(prompt).first(1));

    prof.set_timing(true);
    CategoryTimes ns0 = prof.totals();
    ProfilingBackend::Traffic t0 = prof.traffic();
    auto start = Clock::now();
    std::span<const float> logits = seq.prefill(prompt);
    const PhaseCost prefill =
        since(prof, ns0, t0, std::chrono::duration<double>(Clock::now() - start).count(),
              o.prompt_tokens);
    ns0 = prof.totals();
    t0 = prof.traffic();
    start = Clock::now();
    for (int64_t i = 0; i < o.decode_tokens; ++i) logits = seq.decode(argmax(logits));
    const PhaseCost decode =
        since(prof, ns0, t0, std::chrono::duration<double>(Clock::now() - start).count(),
              o.decode_tokens);
    prof.set_timing(false);

    const double bandwidth = o.bandwidth > 0 ? o.bandwidth : measure_bandwidth(threads);
    json j = {{"model", o.model},
              {"threads", threads},
              {"read_bandwidth_gbs", bandwidth},
              {"bandwidth_source", o.bandwidth > 0 ? "--bandwidth"
                                   : bandwidth > 0 ? "fluoro_membw"
                                                   : "none"},
              {"decode", phase_json(decode, bandwidth, true)},
              {"prefill", phase_json(prefill, bandwidth, false)}};
    if (o.json) {
        std::cout << j.dump(2) << '\n';
        return;
    }
    std::printf("%s: %d threads; read bandwidth %s\n", o.model.c_str(), threads,
                bandwidth > 0 ? (std::to_string(bandwidth).substr(0, 5) + " GB/s (" +
                                 j["bandwidth_source"].get<std::string>() + ")")
                                    .c_str()
                              : "not measured (fluoro_membw not found; --bandwidth GB/s)");
    print_phase(
        "decode (KV up to " + std::to_string(o.prompt_tokens + o.decode_tokens) + " tokens)",
        j["decode"]);
    print_phase("prefill (" + std::to_string(o.prompt_tokens) + " tokens in one batch)",
                j["prefill"]);
}

}  // namespace

void add_profile_command(CLI::App& app) {
    auto o = std::make_shared<ProfileOpts>();
    auto* cmd = app.add_subcommand(
        "profile",
        "Where a token's time goes: per operation category, time, bytes read, GB/s against the "
        "measured memory bandwidth, GFLOP/s — decode and prefill (CPU backend)");
    cmd->add_option("model", o->model, "GGUF model file")->required();
    cmd->add_option("-t,--threads", o->threads, "CPU threads (default: physical cores)");
    cmd->add_option("--prompt-tokens", o->prompt_tokens, "Prefill length (2..8192)")
        ->capture_default_str();
    cmd->add_option("--decode-tokens", o->decode_tokens, "Decode steps after it (1..4096)")
        ->capture_default_str();
    cmd->add_option("--bandwidth", o->bandwidth,
                    "Read bandwidth in GB/s (default: fluoro_membw's, same threads)");
    cmd->add_flag("--json", o->json, "JSON instead of the tables");
    cmd->callback([o] { run_profile(*o); });
}

}  // namespace fluoro::cli
