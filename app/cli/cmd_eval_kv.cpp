// `fluoro eval kv MODEL`: what each KV cache policy (full, window, streaming, h2o, scissorhands,
// snapkv) and KV storage type (f16, q8_0, q4_0, ...) costs in quality and buys in speed, over a
// grid of policy × budget × type (eval/kv_eval.h): perplexity by token-by-token decoding of a
// long text with NLL over position, passkey retrieval at several lengths and depths, decode tok/s
// at long context. Prints an aligned table (stdout), or --json; --csv writes one row per
// configuration × task × metric. Progress goes to stderr.
//
// The text defaults to the King James Bible from Debian's bible-kjv package (`bible -f` prints
// one verse per line after its reference, which is stripped): public domain, long, and installed
// here; --text FILE takes any UTF-8 text instead.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/kv_eval_flags.h"
#include "cli/kv_policy_flags.h"
#include "common/format.h"
#include "core/error.h"
#include "eval/kv_eval.h"
#include "measure/eval_text.h"
#include "measure/kv_eval_plan.h"
#include "measure/measure_json.h"
#include "session/loaded_model.h"

namespace fluoro::cli {
namespace {

struct EvalKvOpts {
    std::string model;
    KvEvalFlags eval;
    std::string csv, attention{attention_impl_name(kDefaultAttentionImpl)};
    bool json = false;
};

// --- output ---

std::string fmt(const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

std::string cell_name(const KvEvalCell& c) {
    return std::string(kv_policy_name(c.policy)) + "/" + c.budget.label() + "/" +
           kv_types_name(c.kv_type);
}

// Passkey trials per length: how many found the key, kept the whole needle cached, ran.
struct PasskeyTally {
    int found = 0, kept = 0, trials = 0;
};
std::map<int64_t, PasskeyTally> passkey_by_length(const KvEvalCell& c) {
    std::map<int64_t, PasskeyTally> m;
    for (const PasskeyTrial& t : c.passkey) {
        PasskeyTally& p = m[t.length];
        p.found += t.correct ? 1 : 0;
        p.kept += t.needle_tokens > 0 && t.needle_kept == t.needle_tokens ? 1 : 0;
        p.trials += 1;
    }
    return m;
}

// The full policy's cell of a KV type that has a perplexity, or nullptr.
const KvEvalCell* full_of_type(const std::vector<KvEvalCell>& cells, KvTypes type) {
    for (const KvEvalCell& c : cells)
        if (c.policy == KvPolicyKind::Full && c.kv_type == type && c.ppl) return &c;
    return nullptr;
}

bool has_task(const KvEvalPlan& plan, KvEvalTask t) {
    return std::find(plan.tasks.begin(), plan.tasks.end(), t) != plan.tasks.end();
}

std::string ppl_ratio(const KvEvalCell& c, const KvEvalCell* full) {
    if (!c.ppl || !full) return "";
    return fmt("%+.1f%%", 100.0 * (c.ppl->ppl / full->ppl->ppl - 1));
}

void print_table(const EvalKvOpts& o, const std::vector<KvEvalCell>& cells) {
    // Columns: the configuration, ppl against full (of the same KV type, and of f16 when several
    // types ran), tokens evicted, passkey hits per length, decode tok/s per context.
    const KvEvalPlan& plan = o.eval.plan;
    const bool ppl = has_task(plan, KvEvalTask::Ppl);
    const bool vs_f16 = ppl && plan.kv_types.size() > 1;
    std::vector<std::string> head{"policy", "budget", "kv"};
    if (ppl) head.insert(head.end(), {"ppl", "vs full"});
    if (vs_f16) head.push_back("vs full f16");
    if (ppl) head.push_back("evicted");
    if (has_task(plan, KvEvalTask::Passkey))
        for (const int64_t len : plan.passkey_lengths) {
            head.push_back("pk@" + std::to_string(len));    // keys found / trials
            head.push_back("kept@" + std::to_string(len));  // needles kept cached / trials
        }
    if (has_task(plan, KvEvalTask::Speed))
        for (const int64_t ctx : plan.speed_contexts)
            head.push_back("tok/s@" + std::to_string(ctx));
    std::vector<std::vector<std::string>> rows{head};
    for (const KvEvalCell& c : cells) {
        std::vector<std::string> r{std::string(kv_policy_name(c.policy)), c.budget.label(),
                                   kv_types_name(c.kv_type)};
        if (ppl) {
            r.push_back(c.ppl ? fmt("%.3f", c.ppl->ppl) : "-");
            r.push_back(ppl_ratio(c, full_of_type(cells, c.kv_type)));
        }
        if (vs_f16) r.push_back(ppl_ratio(c, full_of_type(cells, KvType::F16)));
        if (ppl) r.push_back(c.ppl ? std::to_string(c.ppl->evictions.evicted_tokens) : "");
        if (has_task(plan, KvEvalTask::Passkey)) {
            const auto pk = passkey_by_length(c);
            for (const int64_t len : plan.passkey_lengths) {
                const auto it = pk.find(len);
                const std::string n = it == pk.end() ? "" : "/" + std::to_string(it->second.trials);
                r.push_back(it == pk.end() ? "-" : std::to_string(it->second.found) + n);
                r.push_back(it == pk.end() ? "-" : std::to_string(it->second.kept) + n);
            }
        }
        if (has_task(plan, KvEvalTask::Speed))
            for (const int64_t ctx : plan.speed_contexts) {
                std::string v = "-";
                for (const KvSpeedResult& s : c.speed)
                    if (s.context == ctx) v = fmt("%.1f", s.tokens_per_s);
                r.push_back(v);
            }
        rows.push_back(r);
    }
    std::printf("%s", app::aligned_table(rows, 3).c_str());
    // NLL over position: one line per configuration, one column per bucket.
    bool any = false;
    for (const KvEvalCell& c : cells) any = any || c.ppl.has_value();
    if (any) {
        std::printf("\nmean NLL per %lld positions (ppl task)\n",
                    static_cast<long long>(o.eval.plan.ppl_bucket));
        for (const KvEvalCell& c : cells) {
            if (!c.ppl) continue;
            std::string line = cell_name(c);
            line.resize(std::max<size_t>(line.size(), 26), ' ');
            for (const double v : c.ppl->bucket_nll) line += fmt(" %6.3f", v);
            std::printf("%s\n", line.c_str());
        }
    }
    for (const KvEvalCell& c : cells)
        for (const std::string& e : c.errors)
            std::printf("error %s: %s\n", cell_name(c).c_str(), e.c_str());
}

std::string csv_quoted(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (const char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
}

// model,policy,budget,budget_tokens,kv_type,task,length,depth,position,metric,value,note
std::string to_csv(const std::string& model, const std::vector<KvEvalCell>& cells) {
    std::string out =
        "model,policy,budget,budget_tokens,kv_type,task,length,depth,position,metric,value,note\n";
    auto row = [&](const KvEvalCell& c, int64_t budget_tokens, const char* task,
                   const std::string& length, const std::string& depth, const std::string& position,
                   const char* metric, const std::string& value, const std::string& note = "") {
        out += csv_quoted(model) + "," + std::string(kv_policy_name(c.policy)) + "," +
               c.budget.label() + "," + std::to_string(budget_tokens) + "," +
               kv_types_name(c.kv_type) + "," + task + "," + length + "," + depth + "," + position +
               "," + metric + "," + value + "," + csv_quoted(note) + "\n";
    };
    for (const KvEvalCell& c : cells) {
        if (c.ppl) {
            const KvPplResult& p = *c.ppl;
            const std::string len = std::to_string(p.scored_tokens + 1);
            row(c, p.budget_tokens, "ppl", len, "", "", "ppl", fmt("%.6g", p.ppl));
            row(c, p.budget_tokens, "ppl", len, "", "", "mean_nll", fmt("%.6g", p.mean_nll));
            row(c, p.budget_tokens, "ppl", len, "", "", "evicted_tokens",
                std::to_string(p.evictions.evicted_tokens));
            row(c, p.budget_tokens, "ppl", len, "", "", "eviction_events",
                std::to_string(p.evictions.events));
            row(c, p.budget_tokens, "ppl", len, "", "", "tok_s", fmt("%.2f", p.tokens_per_s));
            for (size_t b = 0; b < p.bucket_nll.size(); ++b)
                row(c, p.budget_tokens, "ppl", len, "", std::to_string(int64_t(b) * p.bucket),
                    "nll", fmt("%.6g", p.bucket_nll[b]));
        }
        for (const auto& [len, acc] : passkey_by_length(c)) {
            row(c, 0, "passkey", std::to_string(len), "", "", "accuracy",
                fmt("%.4g", double(acc.found) / double(acc.trials)));
            row(c, 0, "passkey", std::to_string(len), "", "", "needle_kept_rate",
                fmt("%.4g", double(acc.kept) / double(acc.trials)));
        }
        for (const PasskeyTrial& t : c.passkey) {
            const std::string len = std::to_string(t.length);
            const std::string depth = std::to_string(int(std::lround(t.depth * 100)));
            row(c, t.budget_tokens, "passkey", len, depth, "", "found", t.correct ? "1" : "0",
                "key " + t.key + ", answer '" + t.answer + "'");
            row(c, t.budget_tokens, "passkey", len, depth, "", "needle_kept",
                fmt("%.4g",
                    t.needle_tokens ? double(t.needle_kept) / double(t.needle_tokens) : 0.0));
        }
        for (const KvSpeedResult& s : c.speed) {
            const std::string len = std::to_string(s.context);
            row(c, s.budget_tokens, "speed", len, "", "", "tok_s", fmt("%.2f", s.tokens_per_s));
            row(c, s.budget_tokens, "speed", len, "", "", "cached_tokens",
                std::to_string(s.cached_tokens));
            row(c, s.budget_tokens, "speed", len, "", "", "kv_bytes", std::to_string(s.kv_bytes));
        }
        for (const std::string& e : c.errors) row(c, 0, "", "", "", "", "error", "", e);
    }
    return out;
}

nlohmann::json to_json(const EvalKvOpts& o, const app::LoadedModel& m, int64_t text_tokens,
                       const std::vector<KvEvalCell>& cells) {
    nlohmann::json j = {
        {"model", o.model},
        {"threads", m.backend->threads()},
        {"attention", attention_impl_name(m.backend->attention_impl())},
        {"text", app::eval_text_name(o.eval.text)},
        {"text_tokens", text_tokens},
        {"ppl_tokens", o.eval.plan.ppl_tokens},
        {"bucket", o.eval.plan.ppl_bucket},
        {"passkey_format", passkey_format_name(o.eval.plan.passkey_format)},
        {"sinks", o.eval.plan.base.sinks},
    };
    j["cells"] = app::kv_eval_cells_json(cells);
    return j;
}

void run_eval_kv(EvalKvOpts& o) {
    app::parse_kv_eval_plan(o.eval.lists, o.eval.plan);
    const std::optional<AttentionImpl> impl = parse_attention_impl(o.attention);
    if (!impl)
        throw Error("--attention: unknown name '" + o.attention +
                    "'; valid: " + setting_names(attention_impls(), ", ", ", "));
    const std::string text = app::read_eval_text(o.eval.text);
    app::EngineSettings s;
    s.threads = o.eval.threads;
    s.batch = o.eval.batch;
    s.ctx = 16;  // load_model's own cache is unused: every measurement builds its own
    s.attention = *impl;
    app::LoadedModel m = app::load_model(o.model, s);
    o.eval.plan.passkey_format = app::resolve_passkey_format(
        o.eval.lists.passkey_format, !m.model->chat_template_text().empty());
    const std::vector<int32_t> tokens = app::eval_text_tokens(*m.model, text);
    std::fprintf(stderr, "eval kv: %zu text tokens, %d threads, passkey prompts: %s\n",
                 tokens.size(), m.backend->threads(),
                 std::string(passkey_format_name(o.eval.plan.passkey_format)).c_str());
    const auto cells = run_kv_eval(*m.model, tokens, o.eval.plan, [](const std::string& msg) {
        std::fprintf(stderr, "%s\n", msg.c_str());
    });
    if (!o.csv.empty()) {
        std::ofstream out(o.csv, std::ios::binary);
        out << to_csv(o.model, cells);
        if (!out) throw Error("cannot write '" + o.csv + "'");
    }
    if (o.json)
        std::cout << to_json(o, m, int64_t(tokens.size()), cells)
                         .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                  << '\n';
    else
        print_table(o, cells);
}

}  // namespace

void add_eval_command(CLI::App& app) {
    auto* eval = app.add_subcommand("eval", "Measure quality against cost");
    eval->require_subcommand(1);
    add_eval_claims_command(*eval);
    add_eval_fidelity_command(*eval);
    add_eval_attn_command(*eval);
    auto* cmd = eval->add_subcommand(
        "kv", "KV cache policies and types: perplexity, passkey retrieval and decode speed");
    auto o = std::make_shared<EvalKvOpts>();
    cmd->add_option("model", o->model, "GGUF model file")->required();
    cmd->add_option("--policies", o->eval.lists.policies,
                    "Comma list of: " + setting_help(kv_policies()))
        ->capture_default_str();
    cmd->add_option("--budgets", o->eval.lists.budgets,
                    "KV budgets: N% of the evaluated length or N tokens (full runs at 100% only)")
        ->capture_default_str();
    o->eval.add_to(*cmd);
    cmd->add_option("--bucket", o->eval.plan.ppl_bucket, "Positions per NLL-over-position bucket")
        ->capture_default_str();
    cmd->add_option("--sinks", o->eval.plan.base.sinks, kv_sinks_help())->capture_default_str();
    cmd->add_option("--recent", o->eval.plan.base.recent, kv_recent_help())->capture_default_str();
    cmd->add_option("--evict-chunk", o->eval.plan.base.evict_chunk,
                    "Tokens freed per eviction (0 = budget/16)")
        ->capture_default_str();
    cmd->add_option("--csv", o->csv, "Write one row per configuration x task x metric here");
    cmd->add_flag("--json", o->json, "Print JSON instead of the table");
    cmd->add_option("--attention", o->attention,
                    "Attention implementation: " + setting_help(attention_impls()))
        ->capture_default_str();
    cmd->callback([o] { run_eval_kv(*o); });
}

}  // namespace fluoro::cli
