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
// The same passes are traced (telemetry level Trace's spans, telemetry/op_trace.h), which gives
// the same split per operation (summed over the layers) and per layer, each op against its own
// roofline: the larger of its bytes over the bandwidth and its operations over the compute peak
// (fluoro_membw's fma for float arithmetic, int8 for the quantized matmuls, which multiply int8
// activations by int8-expanded weights) is the least time it can take; and how busy each host
// thread was.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "backend/cpu/thread_pool.h"
#include "cli/commands.h"
#include "core/error.h"
#include "decode/sequence.h"
#include "measure/machine_limits.h"
#include "model/model.h"
#include "session/backend_factory.h"
#include "telemetry/op_costs.h"
#include "telemetry/profiling_backend.h"
#include "tensor/ggml_type.h"

namespace fluoro::cli {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct ProfileOpts {
    std::string model;
    int threads = 0;
    int64_t prompt_tokens = 512, decode_tokens = 64;
    double bandwidth = 0;                  // GB/s; 0: measure with fluoro_membw
    double fma_gflops = 0, int8_gops = 0;  // compute peaks; 0: fluoro_membw's (unless --bandwidth)
    bool json = false, layers = false;
    std::string mla = "absorbed";  // latent-attention models' path (settings.h MlaPath)
};

using Machine = app::MachineLimits;  // 0 where a limit is unknown

// One layer's cost over a phase, or one host thread's (an op's: telemetry/op_costs.h).
struct LayerCost {
    int32_t layer = -1;
    int64_t ns = 0;
    double bytes = 0, flops = 0, floor_s = 0;
};
struct ThreadCost {
    int32_t worker = 0;
    int64_t busy_ns = 0, wait_ns = 0;
};

// What one phase cost: wall time, and the decorator's per-category time, bytes and FLOPs.
struct PhaseCost {
    int64_t tokens = 0;
    double wall_s = 0;
    CategoryTimes ns{};
    ProfilingBackend::Traffic traffic{};
    std::shared_ptr<const StepTrace> trace;  // the phase's spans
};

// Appends a later take of the same profiler: its names table is the earlier one's, grown.
void append_trace(StepTrace& into, const StepTrace& from) {
    into.names = from.names;
    into.threads = from.threads;
    into.dropped += from.dropped;
    into.ops.insert(into.ops.end(), from.ops.begin(), from.ops.end());
    into.workers.insert(into.workers.end(), from.workers.begin(), from.workers.end());
}

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

// The phase's spans summed per op name (in the order the names first ran), per layer and per host
// thread, each op and layer with its achieved rates and its share of its own roofline, each op
// with the share of its time the engine thread spent waiting for the other workers.
void add_trace_json(json& j, const PhaseCost& c, const Machine& m) {
    if (!c.trace) return;
    const StepTrace& t = *c.trace;
    const double n = double(std::max<int64_t>(1, c.tokens));
    const std::vector<OpCost> ops = op_costs(t);
    // The engine thread's waits for the other workers inside each op (an uneven split of the
    // op's tasks), by op name: waits and ops sorted by start, each wait given to the op it began
    // in.
    std::vector<const WorkerBusy*> waits;
    for (const WorkerBusy& b : t.workers)
        if (b.worker == 0 && b.tasks == 0) waits.push_back(&b);
    std::sort(waits.begin(), waits.end(),
              [](const WorkerBusy* a, const WorkerBusy* b) { return a->start_ns < b->start_ns; });
    std::map<std::string, int64_t, std::less<>> wait_ns;
    size_t next_wait = 0;
    std::vector<const OpSpan*> by_time;
    for (const OpSpan& s : t.ops) by_time.push_back(&s);
    std::sort(by_time.begin(), by_time.end(),
              [](const OpSpan* a, const OpSpan* b) { return a->start_ns < b->start_ns; });
    for (const OpSpan* s : by_time) {
        while (next_wait < waits.size() && waits[next_wait]->start_ns < s->start_ns) ++next_wait;
        for (; next_wait < waits.size() && waits[next_wait]->start_ns < s->end_ns; ++next_wait)
            wait_ns[std::string(t.name_of(*s))] +=
                std::min(waits[next_wait]->end_ns, s->end_ns) - waits[next_wait]->start_ns;
    }
    std::map<int32_t, LayerCost> layers;
    double floor_total = 0, op_s = 0;
    for (const OpSpan& s : t.ops) {
        const int64_t ns = s.end_ns - s.start_ns;
        LayerCost& l = layers[s.layer];
        l.layer = s.layer;
        l.ns += ns;
        l.bytes += s.bytes;
        l.flops += s.flops;
        const double fl = app::floor_seconds(m, s.bytes, s.flops, s.weight_type);
        l.floor_s += fl;
        floor_total += fl;
        op_s += double(ns) * 1e-9;
    }
    const auto rates = [&](json& row, int64_t ns, double bytes, double flops) {
        const double s = double(ns) * 1e-9;
        row["ms_per_token"] = s * 1e3 / n;
        row["share"] = c.wall_s > 0 ? s / c.wall_s : 0;
        row["mib_per_token"] = bytes / n / (1 << 20);
        row["gb_per_s"] = s > 0 ? bytes / s * 1e-9 : 0;
        row["gflop_per_s"] = s > 0 ? flops / s * 1e-9 : 0;
        if (m.read_gbs > 0) row["of_bandwidth"] = row["gb_per_s"].get<double>() / m.read_gbs;
    };
    json op_rows = json::array();
    for (const OpCost& o : ops) {
        json row = {{"op", o.name},
                    {"category", std::string(time_category_name(o.category))},
                    {"calls_per_token", double(o.calls) / n}};
        if (o.weight_type >= 0) row["weight_type"] = type_name(GgmlType(o.weight_type));
        rates(row, o.ns, o.bytes, o.flops);
        if (const auto w = wait_ns.find(o.name); w != wait_ns.end() && o.ns > 0)
            row["engine_wait_share"] = double(w->second) / double(o.ns);
        if (o.bytes > 0 || o.flops > 0) {
            const bool int8 = uses_int8_dot(o.weight_type);
            const double peak = app::compute_peak(m, o.weight_type);
            if (peak > 0) {
                row["peak"] = int8 ? "int8" : "fma";
                row["of_peak"] = row["gflop_per_s"].get<double>() / peak;
            }
            // Memory-bound when its bytes take longer than its arithmetic at its peak (the floor
            // is the longer of the two).
            const double floor_s = app::floor_seconds(m, o.bytes, o.flops, o.weight_type);
            if (floor_s > 0) {
                const double mem = m.read_gbs > 0 ? o.bytes / (m.read_gbs * 1e9) : 0;
                row["bound"] = mem >= floor_s ? "memory" : "compute";
                row["of_roofline"] = o.ns > 0 ? floor_s / (double(o.ns) * 1e-9) : 0;
            }
        }
        op_rows.push_back(row);
    }
    json layer_rows = json::array();
    for (const auto& [layer, l] : layers) {
        json row = {{"layer", layer}};
        rates(row, l.ns, l.bytes, l.flops);
        if (l.floor_s > 0 && l.ns > 0) row["of_roofline"] = l.floor_s / (double(l.ns) * 1e-9);
        layer_rows.push_back(row);
    }
    // Host threads: each worker's time running tasks; the engine thread's time waiting for the
    // others at the end of a region.
    std::map<int32_t, ThreadCost> threads;
    for (int32_t w = 0; w < t.threads; ++w) threads[w].worker = w;
    for (const WorkerBusy& b : t.workers) {
        ThreadCost& tc = threads[b.worker];
        (b.tasks > 0 ? tc.busy_ns : tc.wait_ns) += b.end_ns - b.start_ns;
    }
    json thread_rows = json::array();
    for (const auto& [w, tc] : threads)
        thread_rows.push_back(
            {{"worker", w},
             {"busy_share", c.wall_s > 0 ? double(tc.busy_ns) * 1e-9 / c.wall_s : 0},
             {"wait_share", c.wall_s > 0 ? double(tc.wait_ns) * 1e-9 / c.wall_s : 0}});
    j["ops"] = op_rows;
    j["layers"] = layer_rows;
    j["threads_busy"] = thread_rows;
    j["worker_spans_dropped"] = t.dropped;
    if (floor_total > 0 && op_s > 0) {
        j["ops_floor_ms_per_token"] = floor_total * 1e3 / n;
        j["ops_of_roofline"] = floor_total / op_s;
    }
}

// memory_bound: the phase's floor is its bytes over the bandwidth (decode: one token per step);
// a prefill's is its arithmetic, so it gets no bandwidth roofline.
json phase_json(const PhaseCost& c, const Machine& m, bool memory_bound) {
    const double bandwidth = m.read_gbs;
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
    add_trace_json(j, c, m);
    return j;
}

void print_ops(const json& p, bool layers) {
    if (!p.contains("ops")) return;
    std::printf("\n  %-30s %6s %9s %6s %9s %8s %8s %8s %8s %6s\n", "op (all layers)", "calls",
                "ms/token", "share", "MiB/token", "GB/s", "GFLOP/s", "bound", "roofline", "wait");
    for (const json& o : p["ops"]) {
        char roof[16] = "—", bound[16] = "—";
        if (o.contains("of_roofline"))
            std::snprintf(roof, sizeof roof, "%.1f %%", 100 * o["of_roofline"].get<double>());
        if (o.contains("bound"))
            std::snprintf(bound, sizeof bound, "%s", o["bound"].get<std::string>().c_str());
        char wait[16] = "—";
        if (o.contains("engine_wait_share"))
            std::snprintf(wait, sizeof wait, "%.1f %%", 100 * o["engine_wait_share"].get<double>());
        std::printf("  %-30.30s %6.1f %9.4f %5.1f%% %9.3f %8.2f %8.2f %8s %8s %6s\n",
                    o["op"].get<std::string>().c_str(), o["calls_per_token"].get<double>(),
                    o["ms_per_token"].get<double>(), 100 * o["share"].get<double>(),
                    o["mib_per_token"].get<double>(), o["gb_per_s"].get<double>(),
                    o["gflop_per_s"].get<double>(), bound, roof, wait);
    }
    if (p.contains("ops_of_roofline"))
        std::printf("  the ops' own floors add up to %.3f ms/token: %.1f %% of their roofline\n",
                    p["ops_floor_ms_per_token"].get<double>(),
                    100 * p["ops_of_roofline"].get<double>());
    std::printf("  host threads:");
    for (const json& w : p["threads_busy"]) {
        const int worker = w["worker"];
        if (worker == 0)
            std::printf(" engine thread busy %.1f %%, waiting for the workers %.1f %%;",
                        100 * w["busy_share"].get<double>(), 100 * w["wait_share"].get<double>());
        else
            std::printf(" worker %d busy %.1f %%;", worker, 100 * w["busy_share"].get<double>());
    }
    std::printf("\n");
    if (!layers) return;
    std::printf("\n  %-8s %9s %6s %9s %8s %8s\n", "layer", "ms/token", "share", "MiB/token", "GB/s",
                "roofline");
    for (const json& l : p["layers"]) {
        char roof[16] = "—";
        if (l.contains("of_roofline"))
            std::snprintf(roof, sizeof roof, "%.1f %%", 100 * l["of_roofline"].get<double>());
        const int layer = l["layer"];
        std::printf("  %-8s %9.4f %5.1f%% %9.3f %8.2f %8s\n",
                    layer < 0 ? "outside" : std::to_string(layer).c_str(),
                    l["ms_per_token"].get<double>(), 100 * l["share"].get<double>(),
                    l["mib_per_token"].get<double>(), l["gb_per_s"].get<double>(), roof);
    }
}

void print_phase(const std::string& name, const json& p, bool layers) {
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
    print_ops(p, layers);
}

void run_profile(const ProfileOpts& o) {
    if (o.prompt_tokens < 2 || o.prompt_tokens > 8192)
        throw Error("--prompt-tokens must be 2..8192, not " + std::to_string(o.prompt_tokens));
    if (o.decode_tokens < 1 || o.decode_tokens > 4096)
        throw Error("--decode-tokens must be 1..4096, not " + std::to_string(o.decode_tokens));
    if (o.bandwidth < 0 || o.fma_gflops < 0 || o.int8_gops < 0)
        throw Error("--bandwidth, --fma-gflops and --int8-gops must be positive");
    const int threads = o.threads > 0 ? o.threads : cpu::ThreadPool::default_threads();
    const std::unique_ptr<Backend> cpu = app::make_backend(BackendKind::Cpu, threads);
    ProfilingBackend prof(*cpu);
    prof.set_timing(false);
    ModelLoadOptions lo;
    lo.max_batch = o.prompt_tokens;
    lo.max_logit_rows = 1;
    const std::optional<MlaPath> mla = parse_mla_path(o.mla);
    if (!mla) throw Error("--mla must be " + setting_names(mla_paths()) + ", not '" + o.mla + "'");
    lo.mla = *mla;
    const std::unique_ptr<Model> model = Model::load(o.model, prof, lo);
    const int64_t ctx = o.prompt_tokens + o.decode_tokens + 1;
    if (ctx > int64_t(model->hparams().n_ctx_train))
        throw Error("--prompt-tokens + --decode-tokens (" + std::to_string(ctx - 1) +
                    ") is more than the model's context (" +
                    std::to_string(model->hparams().n_ctx_train) + ")");
    const std::unique_ptr<KvCache> kv = model->create_kv(ctx, 1, KvType::F16);
    // A prompt of ordinary text: this paragraph's tokens, repeated.
    std::vector<int32_t> text = model->tokenizer().encode(
        "Where a token's time goes: the weights are read once per step, the keys and values of "
        "every earlier position once per layer, and what is left is arithmetic and overhead. ",
        false, false);
    // A vocabulary that spells no text (a synthetic file's "<tN>" tokens): its ids in order, the
    // same work per step.
    for (int32_t id = 0; text.empty() && id < std::min<int32_t>(256, int32_t(model->n_vocab()));
         ++id)
        text.push_back(id);
    if (text.empty()) throw Error(o.model + ": the model has no tokens to prompt it with");
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
    prof.set_tracing(true);
    prof.discard_trace();
    CategoryTimes ns0 = prof.totals();
    ProfilingBackend::Traffic t0 = prof.traffic();
    auto start = Clock::now();
    std::span<const float> logits = seq.prefill(prompt);
    PhaseCost prefill =
        since(prof, ns0, t0, std::chrono::duration<double>(Clock::now() - start).count(),
              o.prompt_tokens);
    prefill.trace = prof.take_trace(0);
    ns0 = prof.totals();
    t0 = prof.traffic();
    // The spans are taken after every step (a whole phase's worker spans would overflow the
    // pool's rings), outside the steps' timed wall time.
    auto decode_trace = std::make_shared<StepTrace>();
    double decode_wall = 0;
    for (int64_t i = 0; i < o.decode_tokens; ++i) {
        start = Clock::now();
        logits = seq.decode(argmax(logits));
        decode_wall += std::chrono::duration<double>(Clock::now() - start).count();
        append_trace(*decode_trace, *prof.take_trace(0));
    }
    PhaseCost decode = since(prof, ns0, t0, decode_wall, o.decode_tokens);
    decode.trace = decode_trace;
    prof.set_tracing(false);
    prof.set_timing(false);

    // Given limits win; --bandwidth alone skips the probe (no compute peaks then).
    Machine m =
        o.bandwidth > 0 ? Machine{} : app::measure_machine_limits(threads).value_or(Machine{});
    if (o.bandwidth > 0) m.read_gbs = o.bandwidth;
    if (o.fma_gflops > 0) m.fma_gflops = o.fma_gflops;
    if (o.int8_gops > 0) m.int8_gops = o.int8_gops;
    const double bandwidth = m.read_gbs;
    json j = {{"model", o.model},
              {"threads", threads},
              {"read_bandwidth_gbs", bandwidth},
              {"fma_peak_gflops", m.fma_gflops},
              {"int8_peak_gops", m.int8_gops},
              {"bandwidth_source", o.bandwidth > 0 ? "--bandwidth"
                                   : bandwidth > 0 ? "fluoro_membw"
                                                   : "none"},
              {"decode", phase_json(decode, m, true)},
              {"prefill", phase_json(prefill, m, false)}};
    if (o.json) {
        std::cout << j.dump(2) << '\n';
        return;
    }
    std::printf("%s: %d threads; read bandwidth %s\n", o.model.c_str(), threads,
                bandwidth > 0 ? (std::to_string(bandwidth).substr(0, 5) + " GB/s (" +
                                 j["bandwidth_source"].get<std::string>() + ")")
                                    .c_str()
                              : "not measured (fluoro_membw not found; --bandwidth GB/s)");
    if (m.fma_gflops > 0 || m.int8_gops > 0)
        std::printf("compute peaks: fp32 FMA %.1f GFLOP/s, int8 dot %.1f GOP/s\n", m.fma_gflops,
                    m.int8_gops);
    print_phase(
        "decode (KV up to " + std::to_string(o.prompt_tokens + o.decode_tokens) + " tokens)",
        j["decode"], o.layers);
    print_phase("prefill (" + std::to_string(o.prompt_tokens) + " tokens in one batch)",
                j["prefill"], o.layers);
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
    cmd->add_option("--fma-gflops", o->fma_gflops,
                    "fp32 FMA peak in GFLOP/s (default: fluoro_membw's, same threads)");
    cmd->add_option("--int8-gops", o->int8_gops,
                    "int8 dot-product peak in GOP/s (default: fluoro_membw's, same threads)");
    cmd->add_option("--mla", o->mla,
                    "Multi-head latent attention models (deepseek2): " + setting_help(mla_paths()))
        ->capture_default_str();
    cmd->add_flag("--layers", o->layers, "Also the table per layer");
    cmd->add_flag("--json", o->json, "JSON instead of the tables");
    cmd->callback([o] { run_profile(*o); });
}

}  // namespace fluoro::cli
