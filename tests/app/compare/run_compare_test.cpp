// Two runs compared (app/compare/run_compare.h) on hand-made records whose numbers are known:
// the settings that differ, the operation categories that changed per token (and those that did
// not), where the token streams part; the Markdown report and JSON say the same; and
// `fluoro compare` on two exported conversations prints it, with clear errors for a bad run.
#include "compare/run_compare.h"

#include <gtest/gtest.h>

#include <fstream>

#include "app/cli/fluoro_cli.h"
#include "export/json_export.h"
#include "telemetry/time_category.h"
#include "test_temp.h"

namespace fluoro::app {
namespace {

size_t cat(TimeCategory c) {
    return size_t(c);
}

// A finished run: one prefill step of `prompt` tokens and `n` decode steps, each decode step
// spending matmul_us in matmul and attn_us in attention (plus 10 µs of sampling), its tokens the
// pieces given.
RunRecord run(const std::string& threads, double matmul_us, double attn_us,
              const std::vector<std::string>& pieces) {
    RunRecord r;
    r.model_name = "SmolLM2";
    r.model_sha256 = "abcdef0123456789";
    r.settings_json = R"({"threads": )" + threads + R"(, "kv_type": "f16"})";
    r.hardware_json = R"({"cpu": "test"})";
    r.telemetry_level = "basic";
    r.stop_reason = "length";
    r.prompt_tokens = r.computed_tokens = 8;
    r.prefill_ms = 4;
    r.ttft_ms = 5;
    r.n_tokens = r.decode_steps = int64_t(pieces.size());
    r.decode_ms = double(pieces.size()) * (matmul_us + attn_us + 10) * 1e-3;
    StepEvent pre;
    pre.phase = StepPhase::Prefill;
    pre.tokens = 8;
    pre.start_ns = 0;
    pre.end_ns = 4000000;
    pre.op_ns[cat(TimeCategory::Matmul)] = 3000000;
    pre.op_ns[cat(TimeCategory::Attention)] = 1000000;
    r.steps.push_back(pre);
    int64_t t = pre.end_ns;
    for (size_t i = 0; i < pieces.size(); ++i) {
        StepEvent s;
        s.index = int64_t(i) + 1;
        s.phase = StepPhase::Decode;
        s.tokens = 1;
        s.op_ns[cat(TimeCategory::Matmul)] = int64_t(matmul_us * 1000);
        s.op_ns[cat(TimeCategory::Attention)] = int64_t(attn_us * 1000);
        s.op_ns[cat(TimeCategory::Sampling)] = 10000;
        s.start_ns = t;
        s.end_ns = t += s.op_ns[0] + s.op_ns[1] + 10000;
        r.steps.push_back(s);
        TokenEvent tok;
        tok.index = int64_t(i);
        tok.id = int32_t(100 + pieces[i].size() + (pieces[i] == "sky" ? 7 : 0));
        tok.piece = pieces[i];
        tok.t_ns = t;
        r.tokens.push_back(tok);
    }
    return r;
}

const CompareOp& op(const RunComparison& c, const std::string& phase, const std::string& name) {
    for (const ComparePhase& p : c.phases)
        if (p.phase == phase)
            for (const CompareOp& o : p.ops)
                if (o.category == name) return o;
    throw std::runtime_error("no op " + name);
}

TEST(RunCompare, NamesTheSettingsAndOperationsThatChangedAndWhereTokensPart) {
    // b: 4 threads instead of 2, matmul 2x faster, attention the same (2% apart: not a change).
    const RunRecord a = run("2", 4000, 500, {"The", " sky", " is", " blue"});
    const RunRecord b = run("4", 2000, 510, {"The", " sky", " was", " blue"});
    const RunComparison c = compare_runs(a, b);
    bool threads_differ = false, kv_same = false;
    for (const CompareStat& s : c.stats) {
        if (s.name == "threads") threads_differ = s.differs && s.setting;
        if (s.name == "kv_type") kv_same = !s.differs;
    }
    EXPECT_TRUE(threads_differ);
    EXPECT_TRUE(kv_same);
    const CompareOp& mm = op(c, "decode", "matmul");
    EXPECT_DOUBLE_EQ(mm.us_a, 4000);
    EXPECT_DOUBLE_EQ(mm.us_b, 2000);
    EXPECT_TRUE(mm.changed);
    EXPECT_NEAR(mm.share_a, 4000.0 / 4510.0, 1e-12);
    EXPECT_FALSE(op(c, "decode", "attention").changed);  // +2%
    EXPECT_FALSE(op(c, "decode", "sampling").changed);   // equal
    // Prefill: 3 ms of matmul over 8 prompt tokens in both: unchanged.
    EXPECT_DOUBLE_EQ(op(c, "prefill", "matmul").us_a, 375);
    EXPECT_FALSE(op(c, "prefill", "matmul").changed);
    ASSERT_TRUE(c.first_divergence.has_value());
    EXPECT_EQ(*c.first_divergence, 2);
    EXPECT_EQ(c.diverged_tokens, 1);

    const std::string md = comparison_markdown(c, a, b, "run 1", "run 2");
    for (const char* needle : {"# run 1 vs run 2", "  - threads 2 → 4",
                               "  - decode matmul 4000.0 → 2000.0 µs/token (-50%)",
                               "- token streams part at token 2 (1 of 4 positions differ)",
                               "| **2** | ` is` | ` was` |", "| **threads** | 2 | 4 |"})
        EXPECT_NE(md.find(needle), std::string::npos) << needle << "\n" << md;
    EXPECT_EQ(md.find("decode attention 500"), std::string::npos) << md;

    const nlohmann::json j = comparison_json(c, "run 1", "run 2");
    EXPECT_EQ(j["tokens"]["first_divergence"], 2);
    EXPECT_EQ(j["phases"][0]["phase"], "decode");
    EXPECT_EQ(j["phases"][0]["ops"][0]["category"], "matmul");
    EXPECT_TRUE(j["phases"][0]["ops"][0]["changed"].get<bool>());
}

TEST(RunCompare, IdenticalRunsAndAnUnfinishedOne) {
    const RunRecord a = run("2", 1000, 100, {"a", "b"});
    RunComparison c = compare_runs(a, a);
    EXPECT_FALSE(c.first_divergence.has_value());
    for (const CompareStat& s : c.stats) EXPECT_FALSE(s.differs) << s.name;
    for (const ComparePhase& p : c.phases)
        for (const CompareOp& o : p.ops) EXPECT_FALSE(o.changed) << p.phase << " " << o.category;
    EXPECT_NE(comparison_markdown(c, a, a, "x", "y").find("identical token streams (2 tokens)"),
              std::string::npos);
    // A run that never finished has no TTFT; its stream is a prefix of the other's.
    RunRecord b = run("2", 1000, 100, {"a"});
    b.stop_reason.reset();
    c = compare_runs(a, b);
    for (const CompareStat& s : c.stats)
        if (s.name == "TTFT") {
            EXPECT_FALSE(s.b.has_value());
            EXPECT_EQ(s.text_b, "—");
        }
    ASSERT_TRUE(c.first_divergence.has_value());
    EXPECT_EQ(*c.first_divergence, 1);
    // No steps at all (telemetry off, or an old export): zero time, nothing named as changed.
    RunRecord bare = a;
    bare.steps.clear();
    c = compare_runs(bare, bare);
    for (const ComparePhase& p : c.phases) EXPECT_EQ(p.step_us_a, 0.0);
}

// Traces for run()'s steps: each decode step's matmul time split into a QKV op (a quarter) and
// an FFN op (the rest), one per layer of two, and its attention one op per layer.
void add_traces(RunRecord& r, bool prefill_too = true) {
    for (StepEvent& s : r.steps) {
        if (s.phase == StepPhase::Prefill && !prefill_too) continue;
        auto t = std::make_shared<StepTrace>();
        t->names = {"attn_qkv", "attention", "ffn"};
        int64_t at = s.start_ns;
        const int64_t mm = s.op_ns[cat(TimeCategory::Matmul)] / 2,
                      attn = s.op_ns[cat(TimeCategory::Attention)] / 2;
        for (int32_t layer = 0; layer < 2; ++layer)
            for (const auto& [name, ns] :
                 {std::pair{0, mm / 4}, std::pair{1, attn}, std::pair{2, mm - mm / 4}}) {
                t->ops.push_back({at, at + ns, name, layer, int32_t(s.tokens)});
                at += ns;
            }
        s.trace = t;
    }
}

const CompareOp& named(const RunComparison& c, const std::string& name) {
    for (const CompareOp& o : c.phases.at(0).named_ops)
        if (o.category == name) return o;
    throw std::runtime_error("no op " + name);
}

TEST(RunCompare, TracedRunsAreComparedPerOperation) {
    // b: the same matmuls, attention 3x slower: only attention changed, per op as per category.
    RunRecord a = run("2", 4000, 500, {"a", "b", "c"});
    RunRecord b = run("2", 4000, 1500, {"a", "b", "c"});
    add_traces(a);
    add_traces(b);
    RunComparison c = compare_runs(a, b);
    ASSERT_EQ(c.phases.at(0).phase, "decode");
    ASSERT_EQ(c.phases.at(0).named_ops.size(), 3u);
    EXPECT_DOUBLE_EQ(named(c, "attention").us_a, 500);  // two layers of 250 µs per token
    EXPECT_DOUBLE_EQ(named(c, "attention").us_b, 1500);
    EXPECT_TRUE(named(c, "attention").changed);
    EXPECT_DOUBLE_EQ(named(c, "attn_qkv").us_a, 1000);
    EXPECT_FALSE(named(c, "attn_qkv").changed);
    EXPECT_FALSE(named(c, "ffn").changed);
    EXPECT_FALSE(c.phases.at(1).named_ops.empty());  // the prefill was traced too
    const std::string md = comparison_markdown(c, a, b, "a", "b");
    for (const char* needle :
         {"Per operation (both runs traced; every layer summed)",
          "  - decode op attention 500.0 → 1500.0 µs/token (+200%)",
          "  - decode attention 500.0 → 1500.0 µs/token (+200%)", "| attn_qkv | 1000.0 |"})
        EXPECT_NE(md.find(needle), std::string::npos) << needle << "\n" << md;
    const nlohmann::json j = comparison_json(c, "a", "b");
    EXPECT_EQ(j["phases"][0]["named_ops"][1]["op"], "attention");
    EXPECT_TRUE(j["phases"][0]["named_ops"][1]["changed"].get<bool>());

    // A phase with an untraced step in either run is not compared per op.
    RunRecord partly = run("2", 4000, 1500, {"a", "b", "c"});
    add_traces(partly, /*prefill_too=*/false);
    c = compare_runs(a, partly);
    EXPECT_FALSE(c.phases.at(0).named_ops.empty());
    EXPECT_TRUE(c.phases.at(1).named_ops.empty());
    partly.steps.back().trace = nullptr;
    c = compare_runs(a, partly);
    EXPECT_TRUE(c.phases.at(0).named_ops.empty());
    EXPECT_FALSE(comparison_json(c, "a", "b")["phases"][0].contains("named_ops"));
}

TEST(FluoroCompare, ComparesTwoExportedRunsAndRefusesBadOnes) {
    if (!std::filesystem::exists(test::fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    ConversationRecord conv;
    conv.title = "t";
    conv.created_at = "2026-12-05T00:00:00Z";
    MessageRecord user{1, std::nullopt, "user", "Why?", true, conv.created_at};
    MessageRecord reply{2, 1, "assistant", "The sky", true, conv.created_at};
    conv.messages = {user, reply};
    RunRecord a = run("2", 4000, 500, {"The", " sky"}), b = run("4", 2000, 500, {"The", " sea"});
    a.message_id = b.message_id = 2;
    a.started_at = b.started_at = conv.created_at;
    conv.runs = {a, b};
    const auto file = test::unique_temp_path("compare_runs.json");
    std::ofstream(file) << conversation_to_json(conv).dump();
    const std::string f = test::quoted(file.string());
    test::CliResult r = test::run_fluoro("compare " + file.string() + "#1 " + file.string());
    EXPECT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("  - threads 2 → 4"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("decode matmul 4000.0 → 2000.0"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("token streams part at token 1"), std::string::npos) << r.out;
    r = test::run_fluoro("compare -f json " + file.string() + "#1 " + file.string() + "#2");
    EXPECT_EQ(r.rc, 0) << r.out;
    EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"]["first_divergence"], 1) << r.out;
    r = test::run_fluoro("compare " + file.string() + "#3 " + file.string());
    EXPECT_NE(r.rc, 0);
    EXPECT_NE(r.out.find("has 2 runs, not 3"), std::string::npos) << r.out;
    const auto db = test::unique_temp_path("compare_no.db");
    r = test::run_fluoro("compare --db " + test::quoted(db.string()) + "7 8");
    EXPECT_NE(r.rc, 0);
    EXPECT_NE(r.out.find("no session database at"), std::string::npos) << r.out;
    EXPECT_FALSE(std::filesystem::exists(db));
}

}  // namespace
}  // namespace fluoro::app
