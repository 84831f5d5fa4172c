#include "cli/telemetry_bench.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/engine_driver.h"
#include "core/error.h"

namespace fluoro::cli {
namespace {

struct Sample {
    double tps = 0;
    int64_t tokens = 0;
};

double mean(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return v.empty() ? 0 : s / double(v.size());
}

double sd(const std::vector<double>& v) {
    if (v.size() < 2) return 0;
    const double m = mean(v);
    double s = 0;
    for (double x : v) s += (x - m) * (x - m);
    return std::sqrt(s / double(v.size() - 1));
}

}  // namespace

void run_telemetry_bench(const TelemetryBenchOptions& o) {
    std::vector<TelemetryLevel> levels;
    if (o.level == "compare") {
        levels = {TelemetryLevel::Off, TelemetryLevel::Full, TelemetryLevel::Trace};
    } else if (const auto l = parse_telemetry_level(o.level)) {
        levels = {*l};
    } else {
        throw Error("--telemetry must be " + setting_names(telemetry_levels(), ", ", ", ") +
                    " or compare, not '" + o.level + "'");
    }
    if (o.n_gen < 1 || o.repetitions < 1) throw Error("--telemetry needs -n >= 1 and -r >= 1");
    DriverOptions d;
    d.model = o.model;
    d.engine = o.engine;
    d.sampling.params.temperature = 0;  // the same tokens at every level: the same work
    d.max_tokens = o.n_gen;
    d.print_tokens = false;
    d.level = levels[0];
    EngineDriver driver(d);
    const std::string prompt =
        "Write a very long story about a lighthouse keeper and the ships she guides home.";
    std::map<TelemetryLevel, std::vector<double>> tps;
    int64_t tokens = 0;
    // One warm-up run, then the repetitions, levels alternating within each.
    for (int64_t rep = -1; rep < o.repetitions; ++rep) {
        for (TelemetryLevel level : levels) {
            driver.engine().set_telemetry_level(level);
            driver.new_conversation();
            const RunFinished f = driver.run(SendMessage{prompt});
            if (f.stop == "error") throw Error(f.error);
            if (rep < 0) continue;
            tps[level].push_back(f.decode_ms > 0 ? 1000.0 * double(f.decode_steps) / f.decode_ms
                                                 : 0);
            tokens = f.n_tokens;
        }
    }
    if (o.json) {
        nlohmann::json j = {
            {"model", o.model}, {"tokens", tokens}, {"results", nlohmann::json::array()}};
        for (const auto& [level, v] : tps)
            j["results"].push_back({{"telemetry", telemetry_level_name(level)},
                                    {"mean_tps", mean(v)},
                                    {"sd_tps", sd(v)},
                                    {"samples_tps", v}});
        if (levels.size() > 1) {
            j["full_over_off"] = mean(tps[TelemetryLevel::Full]) / mean(tps[TelemetryLevel::Off]);
            j["trace_over_off"] = mean(tps[TelemetryLevel::Trace]) / mean(tps[TelemetryLevel::Off]);
        }
        std::cout << j.dump(2) << '\n';
        return;
    }
    std::printf("| telemetry | decode tokens | t/s |\n| --- | --- | --- |\n");
    for (const auto& [level, v] : tps)
        std::printf("| %s | %lld | %.2f ± %.2f |\n",
                    std::string(telemetry_level_name(level)).c_str(),
                    static_cast<long long>(tokens), mean(v), sd(v));
    if (levels.size() > 1)
        for (TelemetryLevel level : {TelemetryLevel::Full, TelemetryLevel::Trace}) {
            const double ratio = mean(tps[level]) / mean(tps[TelemetryLevel::Off]);
            std::printf("%s / off = %.3f (%.1f%% %s)\n",
                        std::string(telemetry_level_name(level)).c_str(), ratio,
                        100.0 * std::abs(1.0 - ratio), ratio < 1 ? "slower" : "faster");
        }
}

}  // namespace fluoro::cli
