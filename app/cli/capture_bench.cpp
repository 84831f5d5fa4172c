#include "cli/capture_bench.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/engine_driver.h"
#include "core/error.h"

namespace fluoro::cli {
namespace {

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// About `tokens` tokens of plain English (~13 tokens a sentence for BPE vocabularies).
std::string long_prompt(int64_t tokens) {
    std::string s = "Summarize the log below in one sentence.\n";
    for (int64_t i = 0; i < tokens / 13; ++i)
        s += "Day " + std::to_string(i) + ": the keeper lit the lamp and watched the ships.\n";
    return s;
}

}  // namespace

void run_capture_bench(const CaptureBenchOptions& o) {
    if (o.n_gen < 1 || o.repetitions < 1 || o.prompt_tokens < 1)
        throw Error("--capture needs -n >= 1, -r >= 1 and --capture-tokens >= 1");
    DriverOptions d;
    d.model = o.model;
    d.engine = o.engine;
    d.sampling.params.temperature = 0;  // the same tokens either way: the same work
    d.max_tokens = o.n_gen;
    d.print_tokens = false;
    d.level = TelemetryLevel::Summary;
    EngineDriver driver(d);
    int64_t prompt_tokens = 0, n_layer = 0;
    driver.set_sink([&](const Event& e) {
        if (const auto* rs = std::get_if<RunStarted>(&e)) prompt_tokens = rs->prompt_tokens;
        if (const auto* st = std::get_if<AttentionStats>(&e)) n_layer = st->n_layer;
    });
    SetAttentionCapture on;
    on.stats = true;
    // The middle layer (the model's layer count is known once stats arrive; 0 before).
    const auto capture_on = [&] {
        on.specs = {{int32_t(n_layer / 2), 0, 1, 0, 0}};
        return on;
    };
    const std::string prompt = long_prompt(o.prompt_tokens);
    std::vector<double> off_tps, on_tps;
    int64_t tokens = 0;
    // One warm-up pair (it also prefills the prompt, which later runs find cached), then the
    // repetitions, off and on alternating within each.
    for (int64_t rep = -1; rep < o.repetitions; ++rep) {
        for (const bool capture : {false, true}) {
            driver.engine().submit(capture ? capture_on() : SetAttentionCapture{});
            driver.new_conversation();
            const RunFinished f = driver.run(SendMessage{prompt});
            if (f.stop == "error") throw Error(f.error);
            if (rep < 0) continue;
            const double tps = f.decode_ms > 0 ? 1000.0 * double(f.decode_steps) / f.decode_ms : 0;
            (capture ? on_tps : off_tps).push_back(tps);
            tokens = f.n_tokens;
        }
    }
    const double off = median(off_tps), with = median(on_tps);
    if (o.json) {
        nlohmann::json j = {{"model", o.model},
                            {"prompt_tokens", prompt_tokens},
                            {"decode_tokens", tokens},
                            {"capture_layer", n_layer / 2},
                            {"off_median_tps", off},
                            {"on_median_tps", with},
                            {"off_samples_tps", off_tps},
                            {"on_samples_tps", on_tps},
                            {"on_over_off", off > 0 ? with / off : 0}};
        std::cout << j.dump(2) << '\n';
        return;
    }
    std::printf("prompt %lld tokens, %lld decoded per run, %lld runs each\n",
                static_cast<long long>(prompt_tokens), static_cast<long long>(tokens),
                static_cast<long long>(o.repetitions));
    std::printf("| capture | median t/s |\n| --- | --- |\n| off | %.2f |\n| on | %.2f |\n", off,
                with);
    std::printf("on / off = %.3f (%.1f%% slower)\n", off > 0 ? with / off : 0,
                off > 0 ? 100.0 * (1.0 - with / off) : 0);
}

}  // namespace fluoro::cli
