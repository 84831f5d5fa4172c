// Checks a Chrome Trace Event document (the JSON Object Format of Google's "Trace Event Format"
// document, which Perfetto and chrome://tracing read) the way a consumer would rely on it, and
// reports each violation as a test failure:
//   - the top level is an object with a traceEvents array;
//   - every event has a string name, a known phase (X complete, i instant, C counter, M metadata,
//     s/f flow start/end) and an integer pid; all but M an ts >= 0 in microseconds;
//   - X: an integer tid, dur >= 0; i: a tid and scope t/p/g; C: numeric args; M: args object;
//   - s/f: an integer id, each id exactly one s and one f (bp "e"), f not before s, and each end
//     inside an X slice of its track (that is the slice the arrow binds to);
//   - per track, X slices appear in the file in order of their start (monotonic timestamps) and
//     nest properly: each lies inside the slice enclosing its start or after it ended.
// Returns what a test wants to look at next.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace fluoro::test {

struct ChromeSlice {
    std::string name, cat;
    double ts = 0, end = 0;
    const nlohmann::json* event = nullptr;
};

struct ChromeTraceSummary {
    std::map<std::string, int> by_phase;
    std::set<std::string> counters;
    std::map<int, std::string> thread_names;         // tid -> name
    std::map<int, std::vector<ChromeSlice>> slices;  // tid -> X slices in file order
    int flows = 0;
};

inline ChromeTraceSummary check_chrome_trace(const nlohmann::json& doc) {
    ChromeTraceSummary sum;
    if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
        ADD_FAILURE() << "no traceEvents array";
        return sum;
    }
    struct FlowEnd {
        int tid;
        double ts;
    };
    std::map<int64_t, std::vector<FlowEnd>> starts, ends;
    constexpr double kEps = 1e-6;  // microseconds written from integer nanoseconds
    for (const nlohmann::json& e : doc["traceEvents"]) {
        if (!e.is_object() || !e.contains("name") || !e["name"].is_string() || !e.contains("ph") ||
            !e["ph"].is_string() || !e.contains("pid") || !e["pid"].is_number_integer()) {
            ADD_FAILURE() << "event without name, ph or pid: " << e.dump();
            continue;
        }
        const std::string ph = e["ph"];
        ++sum.by_phase[ph];
        if (ph == "M") {
            EXPECT_TRUE(e.contains("args") && e["args"].is_object()) << e.dump();
            if (e["name"] == "thread_name" && e.contains("tid"))
                sum.thread_names[e["tid"].get<int>()] = e["args"].value("name", "");
            continue;
        }
        if (!e.contains("ts") || !e["ts"].is_number() || e["ts"].get<double>() < 0) {
            ADD_FAILURE() << "no ts >= 0: " << e.dump();
            continue;
        }
        const double ts = e["ts"];
        const bool has_tid = e.contains("tid") && e["tid"].is_number_integer();
        if (ph == "X") {
            if (!has_tid || !e.contains("dur") || !e["dur"].is_number() ||
                e["dur"].get<double>() < 0) {
                ADD_FAILURE() << "X without tid or dur >= 0: " << e.dump();
                continue;
            }
            if (e.contains("args")) {
                EXPECT_TRUE(e["args"].is_object()) << e.dump();
            }
            sum.slices[e["tid"].get<int>()].push_back(
                {e["name"], e.value("cat", ""), ts, ts + e["dur"].get<double>(), &e});
        } else if (ph == "C") {
            if (!e.contains("args") || !e["args"].is_object()) {
                ADD_FAILURE() << "C without args: " << e.dump();
                continue;
            }
            for (const auto& [k, v] : e["args"].items()) EXPECT_TRUE(v.is_number()) << k;
            sum.counters.insert(e["name"]);
        } else if (ph == "i") {
            EXPECT_TRUE(has_tid) << e.dump();
            EXPECT_TRUE(e.value("s", "") == "t" || e.value("s", "") == "p" ||
                        e.value("s", "") == "g")
                << e.dump();
        } else if (ph == "s" || ph == "f") {
            if (!has_tid || !e.contains("id") || !e["id"].is_number_integer()) {
                ADD_FAILURE() << "flow without tid or integer id: " << e.dump();
                continue;
            }
            if (ph == "f") {
                EXPECT_EQ(e.value("bp", ""), "e") << e.dump();
            }
            (ph == "s" ? starts : ends)[e["id"].get<int64_t>()].push_back({e["tid"], ts});
        } else {
            ADD_FAILURE() << "unexpected phase " << ph;
        }
    }
    // Flows: paired, in time order, each end bound to a slice of its track.
    const auto inside_a_slice = [&](const FlowEnd& f) {
        for (const ChromeSlice& s : sum.slices[f.tid])
            if (f.ts >= s.ts - kEps && f.ts <= s.end + kEps) return true;
        return false;
    };
    for (const auto& [id, s] : starts) {
        const auto it = ends.find(id);
        if (s.size() != 1 || it == ends.end() || it->second.size() != 1) {
            ADD_FAILURE() << "flow " << id << " is not one start and one end";
            continue;
        }
        EXPECT_GE(it->second[0].ts, s[0].ts - kEps) << "flow " << id;
        EXPECT_TRUE(inside_a_slice(s[0])) << "flow " << id << " starts outside any slice";
        EXPECT_TRUE(inside_a_slice(it->second[0])) << "flow " << id << " ends outside any slice";
        ++sum.flows;
    }
    for (const auto& [id, e] : ends)
        if (!starts.count(id)) ADD_FAILURE() << "flow " << id << " ends without a start";
    // Per track: monotonic starts in file order, proper nesting.
    for (const auto& [tid, list] : sum.slices) {
        std::vector<double> open;
        for (size_t i = 0; i < list.size(); ++i) {
            const ChromeSlice& s = list[i];
            if (i > 0) {
                EXPECT_GE(s.ts, list[i - 1].ts - kEps)
                    << "tid " << tid << ": '" << s.name << "' starts before '" << list[i - 1].name
                    << "' in the file";
            }
            while (!open.empty() && s.ts >= open.back() - kEps) open.pop_back();
            if (!open.empty()) {
                EXPECT_LE(s.end, open.back() + kEps)
                    << "tid " << tid << ": '" << s.name << "' at " << s.ts
                    << " overlaps the end of its enclosing slice";
            }
            open.push_back(s.end);
        }
    }
    return sum;
}

}  // namespace fluoro::test
