#include "measure/measure_plots.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "common/format.h"
#include "core/error.h"
#include "model/attention_variant.h"

namespace fluoro::app {
namespace {

using nlohmann::json;

const json& field(const json& j, const char* key, const char* where) {
    if (!j.is_object() || !j.contains(key))
        throw Error(std::string("measurement: '") + key + "' missing in " + where);
    return j.at(key);
}

double num(const json& j, const char* key, const char* where) {
    const json& v = field(j, key, where);
    if (!v.is_number())
        throw Error(std::string("measurement: '") + key + "' in " + where + " is not a number");
    return v.get<double>();
}

std::string str(const json& j, const char* key, const char* where) {
    const json& v = field(j, key, where);
    if (!v.is_string())
        throw Error(std::string("measurement: '") + key + "' in " + where + " is not a string");
    return v.get<std::string>();
}

const json& array(const json& j, const char* key, const char* where) {
    const json& v = field(j, key, where);
    if (!v.is_array())
        throw Error(std::string("measurement: '") + key + "' in " + where + " is not a list");
    return v;
}

// --- perplexity ---

MeasureView ppl_view(const json& r) {
    MeasureView v;
    const double ppl = num(r, "ppl", "the result");
    const auto scored = int64_t(num(r, "scored_tokens", "the result"));
    const auto chunks = int64_t(num(r, "chunks", "the result"));
    const auto n_ctx = int64_t(num(r, "n_ctx", "the result"));
    v.headline = "perplexity " + format_number("%.4f", ppl) + " over " + std::to_string(scored) +
                 " scored tokens in " + std::to_string(chunks) + " chunks of " +
                 std::to_string(n_ctx) + " (" +
                 format_number("%.1f s", num(r, "seconds", "the result")) + ")";
    MeasurePlot p{"Perplexity after each chunk", "chunks scored", "perplexity", {}, {}, false};
    PlotSeries s{"running perplexity", {}};
    v.table.header = {"chunk", "perplexity so far"};
    const json& running = array(r, "running_ppl", "the result");
    for (size_t i = 0; i < running.size(); ++i) {
        if (!running[i].is_number()) throw Error("measurement: running_ppl holds a non-number");
        s.points.emplace_back(double(i + 1), running[i].get<double>());
        v.table.rows.push_back(
            {std::to_string(i + 1), format_number("%.4f", running[i].get<double>())});
    }
    p.series.push_back(std::move(s));
    v.plots.push_back(std::move(p));
    return v;
}

// --- KV eval ---

struct KvCell {
    std::string policy, budget, kv_type;
    const json* j = nullptr;
    std::string name() const { return policy + "/" + budget + "/" + kv_type; }
};

MeasureView kv_view(const json& r) {
    MeasureView v;
    std::vector<KvCell> cells;
    std::map<std::string, int> types;
    for (const json& c : array(r, "cells", "the result")) {
        cells.push_back({str(c, "policy", "a cell"), str(c, "budget", "a cell"),
                         str(c, "kv_type", "a cell"), &c});
        types[cells.back().kv_type] += 1;
    }
    const bool several_types = types.size() > 1;
    auto series_name = [&](const KvCell& c) {
        return several_types ? c.policy + " " + c.kv_type : c.policy;
    };
    auto full_ppl = [&](const std::string& type) -> const json* {
        for (const KvCell& c : cells)
            if (c.policy == "full" && c.kv_type == type && c.j->contains("ppl"))
                return &c.j->at("ppl");
        return nullptr;
    };
    // Perplexity against the budget as a share of the text actually kept (budget_tokens / tokens).
    MeasurePlot ppl{"Perplexity vs KV budget",
                    "KV budget (% of the text's tokens)",
                    "perplexity",
                    {},
                    {},
                    false};
    MeasurePlot pk{
        "Passkey accuracy vs KV budget", "KV budget (% of the prompt)", "keys found", {}, {}, true};
    MeasurePlot nll{"NLL over position", "position (bucket start)", "mean NLL", {}, {}, false};
    int64_t longest_ctx = 0;
    for (const KvCell& c : cells)
        for (const json& s : array(*c.j, "speed", "a cell"))
            longest_ctx = std::max(longest_ctx, int64_t(num(s, "context", "a speed result")));
    MeasurePlot speed{"Decode speed vs KV budget at " + std::to_string(longest_ctx) + " tokens",
                      "KV budget (% of the context)",
                      "tokens/s",
                      {},
                      {},
                      false};
    std::map<std::string, size_t> ppl_series, pk_series, speed_series;
    auto add = [](MeasurePlot& p, std::map<std::string, size_t>& index, const std::string& name,
                  double x, double y) {
        auto [it, fresh] = index.emplace(name, p.series.size());
        if (fresh) p.series.push_back({name, {}});
        p.series[it->second].points.emplace_back(x, y);
    };
    const int64_t bucket = int64_t(num(r, "bucket", "the result"));
    v.table.header = {"policy", "budget", "kv", "ppl", "vs full", "evicted", "keys found", "tok/s"};
    for (const KvCell& c : cells) {
        std::vector<std::string> row{c.policy, c.budget, c.kv_type, "-", "", "", "-", "-"};
        if (c.j->contains("ppl")) {
            const json& p = c.j->at("ppl");
            const double value = num(p, "ppl", "a cell's ppl");
            const double tokens = num(p, "tokens", "a cell's ppl");
            const double kept = num(p, "budget_tokens", "a cell's ppl");
            add(ppl, ppl_series, series_name(c), 100.0 * kept / std::max(1.0, tokens), value);
            row[3] = format_number("%.3f", value);
            if (const json* full = full_ppl(c.kv_type))
                row[4] =
                    format_number("%+.1f%%", 100.0 * (value / num(*full, "ppl", "full's ppl") - 1));
            row[5] = std::to_string(int64_t(num(p, "evicted_tokens", "a cell's ppl")));
            PlotSeries s{c.name(), {}};
            const json& b = array(p, "bucket_nll", "a cell's ppl");
            for (size_t i = 0; i < b.size(); ++i)
                if (b[i].is_number())
                    s.points.emplace_back(double(int64_t(i) * bucket), b[i].get<double>());
            nll.series.push_back(std::move(s));
        }
        const json& trials = array(*c.j, "passkey", "a cell");
        if (!trials.empty()) {
            int found = 0;
            double share = 0;
            for (const json& t : trials) {
                const json& ok = field(t, "correct", "a passkey trial");
                if (!ok.is_boolean())
                    throw Error("measurement: a passkey trial's 'correct' is not true/false");
                found += ok.get<bool>() ? 1 : 0;
                share += num(t, "budget_tokens", "a passkey trial") /
                         std::max(1.0, num(t, "prompt_tokens", "a passkey trial"));
            }
            const auto n = double(trials.size());
            add(pk, pk_series, series_name(c), 100.0 * share / n, double(found) / n);
            row[6] = std::to_string(found) + "/" + std::to_string(trials.size());
        }
        for (const json& s : array(*c.j, "speed", "a cell")) {
            if (int64_t(num(s, "context", "a speed result")) != longest_ctx) continue;
            const double tps = num(s, "tok_s", "a speed result");
            add(speed, speed_series, series_name(c),
                100.0 * num(s, "budget_tokens", "a speed result") / double(longest_ctx), tps);
            row[7] = format_number("%.1f", tps);
        }
        for (const json& e : array(*c.j, "errors", "a cell"))
            if (e.is_string()) v.notes.push_back(c.name() + ": " + e.get<std::string>());
        v.table.rows.push_back(std::move(row));
    }
    for (MeasurePlot* p : {&ppl, &pk, &speed})
        for (PlotSeries& s : p->series) std::sort(s.points.begin(), s.points.end());
    // The full cache has one point (it keeps everything): drawn as a level line across the
    // budgets the other policies ran at, so it reads as the reference it is.
    for (MeasurePlot* p : {&ppl, &pk, &speed}) {
        double lo = 100;
        for (const PlotSeries& s : p->series)
            for (const auto& [x, y] : s.points) lo = std::min(lo, x);
        for (PlotSeries& s : p->series)
            if (s.name.rfind("full", 0) == 0 && s.points.size() == 1 && lo < s.points[0].first) {
                s.points.insert(s.points.begin(), {lo, s.points[0].second});
                s.name += " (keeps all)";
            }
    }
    for (MeasurePlot* p : {&ppl, &pk, &speed, &nll})
        if (!p->series.empty()) v.plots.push_back(std::move(*p));
    v.headline = std::to_string(cells.size()) + " configurations over " +
                 std::to_string(int64_t(num(r, "text_tokens", "the result"))) + " text tokens";
    if (const json* full = full_ppl("f16"))
        v.headline +=
            "; full f16 cache: perplexity " + format_number("%.3f", num(*full, "ppl", "full"));
    return v;
}

// --- speculative decoding ---

MeasureView spec_view(const json& r) {
    MeasureView v;
    MeasurePlot accept{
        "Acceptance by draft position", "draft position", "accepted / drafted", {}, {}, true};
    MeasurePlot speedup{
        "Speedup per prompt set", "prompt set", "speculative / plain tok/s", {}, {}, false};
    std::map<std::string, size_t> drafter_series;
    v.table.header = {"drafter", "set",       "tokens",   "copied",  "accept",
                      "tau",     "plain t/s", "spec t/s", "speedup", "expected"};
    double best = 0;
    for (const json& row : array(r, "rows", "the result")) {
        const std::string drafter = str(row, "drafter", "a row");
        const std::string category = str(row, "category", "a row");
        PlotSeries s{drafter + " " + category, {}};
        const json& by = array(row, "acceptance_by_position", "a row");
        for (size_t i = 0; i < by.size(); ++i)
            if (by[i].is_number()) s.points.emplace_back(double(i + 1), by[i].get<double>());
        accept.series.push_back(std::move(s));
        auto cat = std::find(speedup.categories.begin(), speedup.categories.end(), category);
        if (cat == speedup.categories.end())
            cat = speedup.categories.insert(speedup.categories.end(), category);
        auto [it, fresh] = drafter_series.emplace(drafter, speedup.series.size());
        if (fresh) speedup.series.push_back({drafter, {}});
        const double x = num(row, "speedup", "a row");
        speedup.series[it->second].points.emplace_back(double(cat - speedup.categories.begin()), x);
        if (x > best) {
            best = x;
            v.headline =
                "best: " + drafter + " on " + category + ", " + format_number("%.2f×", x) + " at " +
                format_number("%.0f%%", 100 * num(row, "acceptance_rate", "a row")) + " acceptance";
        }
        v.table.rows.push_back(
            {drafter, category, std::to_string(int64_t(num(row, "tokens", "a row"))),
             format_number("%.1f%%", 100 * num(row, "copied_fraction", "a row")),
             format_number("%.1f%%", 100 * num(row, "acceptance_rate", "a row")),
             format_number("%.2f", num(row, "mean_tokens_per_forward", "a row")),
             format_number("%.1f", num(row, "plain_tps", "a row")),
             format_number("%.1f", num(row, "spec_tps", "a row")), format_number("%.2f×", x),
             format_number("%.2f×", num(row, "expected_speedup", "a row"))});
    }
    if (v.headline.empty()) v.headline = "no speedup measured";
    v.headline += "; target decode " +
                  format_number("%.2f ms/token", num(r, "target_token_ms", "the result"));
    v.plots.push_back(std::move(accept));
    v.plots.push_back(std::move(speedup));
    return v;
}

// --- textbook claims ---

MeasureView claims_view(const json& r) {
    MeasureView v;
    v.table.header = {"claim", "verdict", "measured"};
    int reproduced = 0, total = 0;
    for (const json& c : array(r, "claims", "the result")) {
        const std::string name = str(c, "name", "a claim");
        const std::string verdict = str(c, "verdict", "a claim");
        ++total;
        reproduced += verdict == "reproduced" ? 1 : 0;
        v.table.rows.push_back({name, verdict, str(c, "why", "a claim")});
        const json& d = field(c, "data", "a claim");
        if (name == "kv_scaling") {
            MeasurePlot p{"Next token's cost with and without the KV cache",
                          "conversation length (tokens)",
                          "ms per token",
                          {},
                          {},
                          false};
            PlotSeries off{"without the cache (whole prefix again)", {}};
            PlotSeries on{"with the cache (one decode step)", {}};
            for (const json& pt : array(d, "points", "kv_scaling")) {
                const double x = num(pt, "position", "a kv_scaling point");
                off.points.emplace_back(x, num(pt, "recompute_ms", "a kv_scaling point"));
                on.points.emplace_back(x, num(pt, "cached_ms", "a kv_scaling point"));
            }
            p.series = {std::move(off), std::move(on)};
            v.plots.push_back(std::move(p));
        } else if (name == "verify_cost") {
            MeasurePlot p{"Verifying k drafted tokens",
                          "drafted tokens k",
                          "cost in one-token decode steps",
                          {},
                          {},
                          false};
            PlotSeries measured{"measured v(k)", {}};
            const json& cost = array(d, "v", "verify_cost");
            for (size_t k = 0; k < cost.size(); ++k)
                if (cost[k].is_number())
                    measured.points.emplace_back(double(k), cost[k].get<double>());
            PlotSeries claim{"the claim: about one step", {}};
            if (!measured.points.empty())
                claim.points = {{0.0, 1.0}, {measured.points.back().first, 1.0}};
            p.series = {std::move(measured), std::move(claim)};
            v.plots.push_back(std::move(p));
        } else if (name == "flash_io") {
            MeasurePlot time_plot{
                "Causal attention, one head: time", "context (tokens)", "ms", {}, {}, false};
            MeasurePlot mem{"Causal attention, one head: extra memory",
                            "context (tokens)",
                            "MiB allocated beyond Q, K, V",
                            {},
                            {},
                            false};
            const char* paths[] = {"naive", "rowwise", "flash"};
            const char* names[] = {"naive (n × n scores)", "one score row at a time",
                                   "flash (16 × 64 tiles)"};
            for (int i = 0; i < 3; ++i) {
                PlotSeries t{names[i], {}}, m{names[i], {}};
                for (const json& pt : array(d, "points", "flash_io")) {
                    const double n = num(pt, "n", "a flash_io point");
                    const json& path = field(pt, paths[i], "a flash_io point");
                    t.points.emplace_back(n, num(path, "ms", paths[i]));
                    m.points.emplace_back(n, num(path, "extra_bytes", paths[i]) / 1048576.0);
                }
                time_plot.series.push_back(std::move(t));
                mem.series.push_back(std::move(m));
            }
            v.plots.push_back(std::move(time_plot));
            v.plots.push_back(std::move(mem));
        } else if (name == "sliding_window" && d.contains("layers")) {
            MeasurePlot field_plot{
                "Receptive field per layer (theory)", "layer", "tokens reachable", {}, {}, false};
            MeasurePlot past{"Attention past the sliding window per layer",
                             "layer",
                             "share of attention",
                             {},
                             {},
                             true};
            PlotSeries rf{"receptive field", {}}, mass{"mass older than the window", {}};
            for (const json& l : array(d, "layers", "sliding_window")) {
                const double x = num(l, "layer", "a layer");
                rf.points.emplace_back(x, num(l, "receptive_field", "a layer"));
                mass.points.emplace_back(x, num(l, "mass_beyond_window", "a layer"));
            }
            field_plot.series.push_back(std::move(rf));
            past.series.push_back(std::move(mass));
            v.plots.push_back(std::move(field_plot));
            v.plots.push_back(std::move(past));
        } else if (name == "sinks") {
            MeasurePlot p{"Attention on the first 4 tokens per layer",
                          "layer",
                          "share of attention",
                          {},
                          {},
                          true};
            PlotSeries mass{"first 4 tokens", {}};
            const json& m = array(d, "sink_mass", "sinks");
            for (size_t l = 0; l < m.size(); ++l)
                if (m[l].is_number()) mass.points.emplace_back(double(l), m[l].get<double>());
            PlotSeries uniform{"uniform share", {}};
            if (!mass.points.empty())
                uniform.points = {{0.0, num(d, "uniform_share", "sinks")},
                                  {mass.points.back().first, num(d, "uniform_share", "sinks")}};
            p.series = {std::move(mass), std::move(uniform)};
            v.plots.push_back(std::move(p));
            v.notes.push_back(
                "sinks: perplexity over " + std::to_string(int64_t(num(d, "ppl_tokens", "sinks"))) +
                " tokens at a " + std::to_string(int64_t(num(d, "budget", "sinks"))) +
                "-token budget: full " + format_number("%.3f", num(d, "ppl_full", "sinks")) +
                ", window " + format_number("%.3f", num(d, "ppl_window", "sinks")) +
                ", StreamingLLM " + format_number("%.3f", num(d, "ppl_streaming", "sinks")) +
                "; a step over the cached window " +
                format_number("%.2f ms", num(d, "window_decode_ms", "sinks")) +
                " vs re-computing it " +
                format_number("%.1f ms", num(d, "recompute_window_ms", "sinks")));
        } else if (name == "heavy_hitters") {
            MeasurePlot p{"Attention held by the most attended tokens, per layer",
                          "layer",
                          "share of accumulated attention",
                          {},
                          {},
                          true};
            PlotSeries t10{"top 10% of tokens", {}}, t20{"top 20% of tokens", {}};
            double last = 0;
            for (const json& l : array(d, "layers", "heavy_hitters")) {
                const double x = num(l, "layer", "a layer");
                t10.points.emplace_back(x, num(l, "top10_share", "a layer"));
                t20.points.emplace_back(x, num(l, "top20_share", "a layer"));
                last = x;
            }
            PlotSeries uniform{"uniform: 20% of tokens", {{0.0, 0.2}, {last, 0.2}}};
            p.series = {std::move(t10), std::move(t20), std::move(uniform)};
            v.plots.push_back(std::move(p));
        } else if (name == "prefix_cache") {
            MeasurePlot p{"Time to first token vs uncached tokens",
                          "tokens not cached",
                          "ms to first token",
                          {},
                          {},
                          false};
            PlotSeries ttft{"measured", {}};
            for (const json& pt : array(d, "points", "prefix_cache"))
                ttft.points.emplace_back(num(pt, "uncached", "a point"),
                                         num(pt, "ttft_ms", "a point"));
            std::sort(ttft.points.begin(), ttft.points.end());
            PlotSeries line{"linear fit", {}};
            const double a = num(d, "intercept_ms", "prefix_cache"),
                         b = num(d, "ms_per_uncached_token", "prefix_cache");
            if (!ttft.points.empty())
                line.points = {{ttft.points.front().first, a + b * ttft.points.front().first},
                               {ttft.points.back().first, a + b * ttft.points.back().first}};
            p.series = {std::move(ttft), std::move(line)};
            v.plots.push_back(std::move(p));
        } else if (name == "kv_memory") {
            for (const json& row : array(d, "rows", "kv_memory")) {
                if (row.contains("error")) {
                    v.notes.push_back(str(row, "kv_type", "a kv_memory row") + ": " +
                                      str(row, "error", "a kv_memory row"));
                    continue;
                }
                v.notes.push_back(
                    str(row, "kv_type", "a kv_memory row") + ": formula " +
                    std::to_string(int64_t(num(row, "formula_per_token", "a kv_memory row"))) +
                    " B per token, allocator " +
                    std::to_string(int64_t(num(row, "cache_per_token", "a kv_memory row"))) +
                    " B per token, " +
                    std::to_string(int64_t(num(row, "allocated", "a kv_memory row"))) +
                    " B allocated for " +
                    std::to_string(int64_t(num(row, "ctx", "a kv_memory row"))) + " tokens");
            }
            const json& ex = field(d, "worked_example", "kv_memory");
            v.notes.push_back(
                "worked example, " + str(ex, "model", "the worked example") + ": " +
                std::to_string(int64_t(num(ex, "bytes_per_token", "it"))) + " B per token, " +
                format_number("%.2f GiB", num(ex, "bytes_at_8192", "it") / 1073741824.0) +
                " at 8192 tokens");
        }
    }
    v.headline = std::to_string(reproduced) + " of " + std::to_string(total) +
                 " claims reproduced on this model and machine";
    return v;
}

// --- attention variants (eval_attn) ---

MeasureView attn_view(const json& r) {
    MeasureView v;
    const json& variants = array(r, "variants", "the result");
    // Passkey lengths and speed contexts that ran, in order.
    std::vector<int64_t> lengths, contexts;
    auto note = [](std::vector<int64_t>& list, int64_t x) {
        if (std::find(list.begin(), list.end(), x) == list.end()) list.push_back(x);
    };
    for (const json& var : variants)
        for (const json& c : array(var, "cells", "a variant")) {
            for (const json& t : array(c, "passkey", "a cell"))
                note(lengths, int64_t(num(t, "length", "a passkey trial")));
            for (const json& sp : array(c, "speed", "a cell"))
                note(contexts, int64_t(num(sp, "context", "a speed result")));
        }
    v.table.header = {"variant", "attention", "kv", "KV B/token", "vs first", "ppl", "dPPL"};
    for (const int64_t len : lengths) v.table.header.push_back("pk@" + std::to_string(len));
    for (const int64_t ctx : contexts) v.table.header.push_back("tok/s@" + std::to_string(ctx));
    // log(ppl / first ppl): the change in mean NLL, nats per token — perplexity ratios span
    // orders of magnitude between a variant that keeps the model and one that breaks it.
    MeasurePlot ppl{"Mean NLL change vs KV bytes per token",
                    "KV bytes per token",
                    "mean NLL vs the first row (nats/token)",
                    {},
                    {},
                    false};
    MeasurePlot pk{
        "Passkey accuracy vs KV bytes per token", "KV bytes per token", "keys found", {}, {}, true};
    double base_bytes = 0, base_ppl = 0;
    double min_bytes = 0, max_bytes = 0, min_d = 0, max_d = 0;
    bool any_ppl = false;
    for (const json& var : variants) {
        const std::string name = str(var, "name", "a variant");
        AttentionVariant att;
        att.name = str(var, "attention", "a variant");
        att.q_per_kv = num(var, "query_heads_per_kv_head", "a variant");
        att.latent_rank = uint64_t(num(var, "latent_rank", "a variant"));
        const std::string label = att.label();
        const json& bytes = field(var, "kv_bytes_per_token", "a variant");
        PlotSeries ppl_s{name, {}}, pk_s{name, {}};
        for (const json& c : array(var, "cells", "a variant")) {
            const std::string kv = str(c, "kv_type", "a cell");
            const double b = num(bytes, kv.c_str(), "kv_bytes_per_token");
            if (base_bytes == 0) base_bytes = b;
            min_bytes = min_bytes == 0 ? b : std::min(min_bytes, b);
            max_bytes = std::max(max_bytes, b);
            std::vector<std::string> row{name,
                                         label,
                                         kv,
                                         std::to_string(int64_t(b)),
                                         format_number("%.3fx", b / std::max(1.0, base_bytes)),
                                         "-",
                                         ""};
            if (c.contains("ppl")) {
                const double value = num(c.at("ppl"), "ppl", "a cell's ppl");
                if (base_ppl == 0) base_ppl = value;
                const double d = 100.0 * (value / base_ppl - 1);
                row[5] = format_number("%.3f", value);
                row[6] = format_number("%+.1f%%", d);
                ppl_s.points.emplace_back(b, std::log(value / base_ppl));
                min_d = any_ppl ? std::min(min_d, d) : d;
                max_d = any_ppl ? std::max(max_d, d) : d;
                any_ppl = true;
            }
            int found_all = 0, trials_all = 0;
            for (const int64_t len : lengths) {
                int found = 0, trials = 0;
                for (const json& t : array(c, "passkey", "a cell"))
                    if (int64_t(num(t, "length", "a passkey trial")) == len) {
                        found += field(t, "correct", "a passkey trial").get<bool>() ? 1 : 0;
                        ++trials;
                    }
                row.push_back(trials ? std::to_string(found) + "/" + std::to_string(trials) : "-");
                found_all += found;
                trials_all += trials;
            }
            if (trials_all) pk_s.points.emplace_back(b, double(found_all) / double(trials_all));
            for (const int64_t ctx : contexts) {
                std::string cell = "-";
                for (const json& sp : array(c, "speed", "a cell"))
                    if (int64_t(num(sp, "context", "a speed result")) == ctx)
                        cell = format_number("%.1f", num(sp, "tok_s", "a speed result"));
                row.push_back(cell);
            }
            for (const json& e : array(c, "errors", "a cell"))
                v.notes.push_back(name + "/" + kv + ": " + e.get<std::string>());
            v.table.rows.push_back(std::move(row));
        }
        std::sort(ppl_s.points.begin(), ppl_s.points.end());
        std::sort(pk_s.points.begin(), pk_s.points.end());
        if (!ppl_s.points.empty()) ppl.series.push_back(std::move(ppl_s));
        if (!pk_s.points.empty()) pk.series.push_back(std::move(pk_s));
    }
    if (!ppl.series.empty()) v.plots.push_back(std::move(ppl));
    if (!pk.series.empty()) v.plots.push_back(std::move(pk));
    v.headline = std::to_string(variants.size()) + " attention variants: KV " +
                 std::to_string(int64_t(min_bytes)) + "-" + std::to_string(int64_t(max_bytes)) +
                 " bytes per token";
    if (any_ppl)
        v.headline += ", perplexity " + format_number("%+.1f%%", min_d) + " to " +
                      format_number("%+.1f%%", max_d) + " vs the first row";
    v.notes.insert(v.notes.begin(),
                   "Training-free conversions: the papers fine-tune after converting; these "
                   "rows are not.");
    // Older stored results have no calibration key; null: fitted to the weights.
    if (const auto cal = r.find("calibration"); cal != r.end() && cal->is_object())
        v.notes.insert(v.notes.begin() + 1,
                       "The aligned merge and the MLA conversions were fitted to the keys and "
                       "values on " +
                           std::to_string(cal->value("tokens", int64_t(0))) + " tokens of " +
                           cal->value("text", std::string("the text")) + " after its first " +
                           std::to_string(cal->value("skip", int64_t(0))) +
                           " (none of them scored).");
    return v;
}

}  // namespace

MeasureView measure_view(const json& m) {
    const std::string kind = str(m, "kind", "the measurement");
    const json& r = field(m, "result", "the measurement");
    if (kind == "ppl") return ppl_view(r);
    if (kind == "eval_kv") return kv_view(r);
    if (kind == "bench_spec") return spec_view(r);
    if (kind == "claims") return claims_view(r);
    if (kind == "eval_attn") return attn_view(r);
    throw Error("measurement: unknown kind '" + kind + "'");
}

}  // namespace fluoro::app
