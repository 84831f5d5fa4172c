// The batch scheduler's trace file: metadata names the slots, every step is a slice on the
// "steps" track and one on each slot it computed for (prefill or decode, with the run and
// tokens), counters follow each step, and the file is valid JSON both closed and cut off before
// close() (the JSON Array Format's closing bracket is optional; we add it to parse).
#include "server/batch_trace.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "test_temp.h"

namespace fluoro::app {
namespace {

using nlohmann::json;

std::string read(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

BatchStep step(int64_t index, std::chrono::steady_clock::time_point t) {
    BatchStep s;
    s.index = index;
    s.started = t;
    s.ms = 2.5;
    s.forward_ms = 2.0;
    BatchStepPart decode{7, 0, 1, false, false, 40};
    BatchStepPart prefill{9, 2, 64, true, index == 1, 64 * (index + 1)};
    s.parts = {decode, prefill};
    s.tokens = 65;
    s.decode_tokens = 1;
    s.prefill_tokens = 64;
    return s;
}

TEST(BatchTrace, StepsAndSlotsAreSlicesAndTheFileParsesClosedOrCut) {
    const auto path = test::unique_temp_path("batch_trace.json");
    BatchLoad load;
    load.running = 2;
    load.waiting = 1;
    load.kv_used_bytes = 3 << 20;
    {
        BatchTraceWriter w(path, 4);
        const auto t0 = std::chrono::steady_clock::now();
        w.step(step(0, t0), load);
        w.step(step(1, t0 + std::chrono::milliseconds(3)), load);
        w.close();
        w.step(step(2, t0), load);  // after close: ignored
    }
    const std::string text = read(path);
    const json all = json::parse(text);
    ASSERT_TRUE(all.is_array());
    // Cut before close() (a killed server): the text up to the last event, bracket added.
    const std::string cut = text.substr(0, text.rfind(']'));
    EXPECT_TRUE(json::accept(cut + "]"));

    int slots_named = 0, steps = 0, decodes = 0, prefills = 0, counters = 0;
    for (const json& e : all) {
        const std::string ph = e["ph"];
        if (ph == "M" && e["name"] == "thread_name" &&
            e["args"]["name"].get<std::string>().rfind("slot ", 0) == 0)
            ++slots_named;
        if (ph == "X" && e["tid"] == 1) {
            ++steps;
            EXPECT_EQ(e["args"]["tokens"], 65);
            EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 2500.0);
        }
        if (ph == "X" && e["name"] == "decode") {
            ++decodes;
            EXPECT_EQ(e["tid"], 10);  // slot 0
            EXPECT_EQ(e["args"]["run"], 7);
        }
        if (ph == "X" && e["name"] == "prefill") {
            ++prefills;
            EXPECT_EQ(e["tid"], 12);  // slot 2
            EXPECT_EQ(e["args"]["tokens"], 64);
        }
        if (ph == "C") {
            ++counters;
            if (e["name"] == "requests") {
                EXPECT_EQ(e["args"]["running"], 2);
                EXPECT_EQ(e["args"]["waiting"], 1);
            } else {
                EXPECT_DOUBLE_EQ(e["args"]["used MiB"].get<double>(), 3.0);
            }
        }
    }
    EXPECT_EQ(slots_named, 4);
    EXPECT_EQ(steps, 2);
    EXPECT_EQ(decodes, 2);
    EXPECT_EQ(prefills, 2);
    EXPECT_EQ(counters, 4);
}

TEST(BatchTrace, AnUnwritablePathIsNamed) {
    try {
        BatchTraceWriter w("/nonexistent-dir/x/trace.json", 2);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x/trace.json"), std::string::npos);
    }
}

}  // namespace
}  // namespace fluoro::app
