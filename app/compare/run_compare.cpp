#include "compare/run_compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "common/format.h"
#include "telemetry/time_category.h"

namespace fluoro::app {
namespace {

using nlohmann::json;

constexpr const char* kNone = "—";

std::string number_text(std::optional<double> v, int decimals, const std::string& unit) {
    if (!v) return kNone;
    char fmt[16];
    std::snprintf(fmt, sizeof fmt, "%%.%df", decimals);
    return format_number(fmt, *v) + (unit.empty() ? "" : " " + unit);
}

// A settings or hardware value as one line of text: strings unquoted, whole numbers without a
// fraction, others to 6 significant digits (a float setting stored as 0.8f reads 0.8, not
// 0.800000011920929).
std::string value_text(const json& v) {
    if (v.is_null()) return kNone;
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_float()) {
        const double d = v.get<double>();
        if (d == std::floor(d) && std::abs(d) < 1e15) return std::to_string(int64_t(d));
        return format_number("%.6g", d);
    }
    return v.dump();
}

std::string file_name(const std::string& path) {
    return path.substr(path.find_last_of('/') == std::string::npos ? 0
                                                                   : path.find_last_of('/') + 1);
}

json parse_object(const std::string& text) {
    const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    return j.is_object() ? j : json::object();
}

int64_t generated(const RunRecord& r) {
    return r.stop_reason ? r.n_tokens : int64_t(r.tokens.size());
}

std::optional<double> rate(double count, double ms) {
    return ms > 0 ? std::optional<double>(1000.0 * count / ms) : std::nullopt;
}

std::optional<double> if_finished(const RunRecord& r, double v) {
    return r.stop_reason ? std::optional<double>(v) : std::nullopt;
}

void add_number(RunComparison& c, const std::string& name, std::optional<double> a,
                std::optional<double> b, const std::string& unit, int decimals) {
    CompareStat s{name, unit, a, b, number_text(a, decimals, unit), number_text(b, decimals, unit)};
    s.differs = s.text_a != s.text_b;
    c.stats.push_back(std::move(s));
}

void add_text(RunComparison& c, const std::string& name, const std::string& a, const std::string& b,
              bool setting = false) {
    CompareStat s{
        name, "", std::nullopt, std::nullopt, a.empty() ? kNone : a, b.empty() ? kNone : b};
    s.differs = s.text_a != s.text_b;
    s.setting = setting;
    c.stats.push_back(std::move(s));
}

std::string stop_text(const RunRecord& r) {
    if (!r.stop_reason) return "never finished";
    return *r.stop_reason + (r.error ? ": " + *r.error : "");
}

// One phase's steps summed: wall time and each category's time, in ns.
struct PhaseSum {
    int64_t tokens = 0, wall_ns = 0;
    CategoryTimes op_ns{};
};

PhaseSum sum_phase(const RunRecord& r, bool prefill) {
    PhaseSum s;
    for (const StepEvent& st : r.steps) {
        if ((st.phase == StepPhase::Prefill) != prefill) continue;
        s.wall_ns += std::max<int64_t>(0, st.end_ns - st.start_ns);
        for (size_t c = 0; c < kTimeCategories; ++c) s.op_ns[c] += st.op_ns[c];
        if (prefill) s.tokens += st.tokens;
    }
    if (!prefill) s.tokens = generated(r);
    return s;
}

double per_token(int64_t ns, int64_t tokens) {
    return tokens > 0 ? double(ns) * 1e-3 / double(tokens) : 0.0;
}

// One operation (a category or an op name) of both runs: µs per token, share of the phase.
CompareOp compare_op(std::string name, int64_t ns_a, int64_t ns_b, const PhaseSum& sa,
                     const PhaseSum& sb) {
    CompareOp op;
    op.category = std::move(name);
    op.us_a = per_token(ns_a, sa.tokens);
    op.us_b = per_token(ns_b, sb.tokens);
    op.share_a = sa.wall_ns > 0 ? double(ns_a) / double(sa.wall_ns) : 0.0;
    op.share_b = sb.wall_ns > 0 ? double(ns_b) / double(sb.wall_ns) : 0.0;
    const double delta = std::abs(op.us_b - op.us_a);
    op.changed = sa.tokens > 0 && sb.tokens > 0 && delta > kOpChange * op.us_a &&
                 (op.share_b > kOpShare || op.share_a > kOpShare);
    return op;
}

// A phase's op time per name from its steps' traces, in first-run order; nullopt when a step
// of the phase has no trace (or the phase has no step).
struct NamedSum {
    std::vector<std::string> order;
    std::map<std::string, int64_t> ns;
};
std::optional<NamedSum> sum_named(const RunRecord& r, bool prefill) {
    NamedSum s;
    bool any = false;
    for (const StepEvent& st : r.steps) {
        if ((st.phase == StepPhase::Prefill) != prefill) continue;
        if (!st.trace) return std::nullopt;
        any = true;
        for (const OpSpan& op : st.trace->ops) {
            const std::string name(st.trace->name_of(op));
            auto [it, added] = s.ns.emplace(name, 0);
            if (added) s.order.push_back(name);
            it->second += op.end_ns - op.start_ns;
        }
    }
    if (!any) return std::nullopt;
    return s;
}

void compare_named(const RunRecord& a, const RunRecord& b, bool prefill, ComparePhase& p,
                   const PhaseSum& sa, const PhaseSum& sb) {
    const std::optional<NamedSum> na = sum_named(a, prefill), nb = sum_named(b, prefill);
    if (!na || !nb) return;
    std::vector<std::string> names = na->order;
    for (const std::string& n : nb->order)
        if (!na->ns.count(n)) names.push_back(n);
    for (const std::string& n : names) {
        const auto ns_of = [&](const NamedSum& s) {
            const auto it = s.ns.find(n);
            return it == s.ns.end() ? int64_t(0) : it->second;
        };
        p.named_ops.push_back(compare_op(n, ns_of(*na), ns_of(*nb), sa, sb));
    }
}

ComparePhase compare_phase(const RunRecord& a, const RunRecord& b, bool prefill) {
    const PhaseSum sa = sum_phase(a, prefill), sb = sum_phase(b, prefill);
    ComparePhase p;
    p.phase = prefill ? "prefill" : "decode";
    p.tokens_a = sa.tokens;
    p.tokens_b = sb.tokens;
    p.step_us_a = per_token(sa.wall_ns, sa.tokens);
    p.step_us_b = per_token(sb.wall_ns, sb.tokens);
    for (size_t c = 0; c < kTimeCategories; ++c)
        p.ops.push_back(compare_op(std::string(time_category_name(TimeCategory(c))), sa.op_ns[c],
                                   sb.op_ns[c], sa, sb));
    compare_named(a, b, prefill, p, sa, sb);
    return p;
}

bool same_token(const RunRecord& a, const RunRecord& b, size_t i) {
    if (i >= a.tokens.size() || i >= b.tokens.size()) return false;
    return a.tokens[i].id == b.tokens[i].id && a.tokens[i].piece == b.tokens[i].piece;
}

// A token's text as code in a table cell (a backtick in it would end the code span).
std::string cell(std::string piece) {
    std::replace(piece.begin(), piece.end(), '`', '\'');
    return "`" + table_cell_text(piece) + "`";
}

}  // namespace

RunComparison compare_runs(const RunRecord& a, const RunRecord& b) {
    RunComparison c;
    add_text(c, "model", a.model_name, b.model_name, true);
    add_text(c, "model file", file_name(a.model_path), file_name(b.model_path), true);
    add_text(c, "model sha256", a.model_sha256.substr(0, 12), b.model_sha256.substr(0, 12), true);
    add_number(c, "prompt tokens", double(a.prompt_tokens), double(b.prompt_tokens), "", 0);
    add_number(c, "cached tokens", if_finished(a, double(a.cached_tokens)),
               if_finished(b, double(b.cached_tokens)), "", 0);
    add_number(c, "TTFT", if_finished(a, a.ttft_ms), if_finished(b, b.ttft_ms), "ms", 1);
    add_number(c, "prompt tok/s", rate(double(a.computed_tokens), a.prefill_ms),
               rate(double(b.computed_tokens), b.prefill_ms), "tok/s", 1);
    add_number(c, "decode tok/s", rate(double(a.decode_steps), a.decode_ms),
               rate(double(b.decode_steps), b.decode_ms), "tok/s", 1);
    add_number(c, "tokens", double(generated(a)), double(generated(b)), "", 0);
    if (a.drafted_tokens > 0 || b.drafted_tokens > 0) {
        const auto acceptance = [](const RunRecord& r) -> std::optional<double> {
            if (r.drafted_tokens <= 0) return std::nullopt;
            return double(r.accepted_tokens) / double(r.drafted_tokens);
        };
        add_number(c, "acceptance rate", acceptance(a), acceptance(b), "", 3);
    }
    add_number(c, "duration", if_finished(a, double(a.duration_ns) * 1e-6),
               if_finished(b, double(b.duration_ns) * 1e-6), "ms", 1);
    add_text(c, "stop reason", stop_text(a), stop_text(b));
    // Settings and hardware, key by key: the union of both runs' keys, a's order first.
    for (const auto& [ja, jb] :
         {std::pair{parse_object(a.settings_json), parse_object(b.settings_json)},
          std::pair{parse_object(a.hardware_json), parse_object(b.hardware_json)}}) {
        std::vector<std::string> keys;
        for (const auto& item : ja.items()) keys.push_back(item.key());
        for (const auto& item : jb.items())
            if (!ja.contains(item.key())) keys.push_back(item.key());
        for (const std::string& k : keys)
            add_text(c, k, value_text(ja.value(k, json())), value_text(jb.value(k, json())), true);
    }
    add_text(c, "telemetry level", a.telemetry_level, b.telemetry_level, true);
    add_text(c, "started", a.started_at, b.started_at);

    c.phases.push_back(compare_phase(a, b, /*prefill=*/false));
    c.phases.push_back(compare_phase(a, b, /*prefill=*/true));

    c.tokens_a = int64_t(a.tokens.size());
    c.tokens_b = int64_t(b.tokens.size());
    const size_t n = std::max(a.tokens.size(), b.tokens.size());
    for (size_t i = 0; i < n; ++i)
        if (!same_token(a, b, i)) {
            if (!c.first_divergence) c.first_divergence = int64_t(i);
            ++c.diverged_tokens;
        }
    return c;
}

std::string comparison_markdown(const RunComparison& c, const RunRecord& a, const RunRecord& b,
                                const std::string& label_a, const std::string& label_b) {
    std::ostringstream o;
    o << "# " << label_a << " vs " << label_b << "\n\n";
    // What changed, first: the settings that differ, the categories that changed, the tokens.
    std::vector<std::string> settings, ops;
    for (const CompareStat& s : c.stats)
        if (s.setting && s.differs) settings.push_back(s.name + " " + s.text_a + " → " + s.text_b);
    for (const ComparePhase& p : c.phases)
        for (const std::vector<CompareOp>* list : {&p.ops, &p.named_ops})
            for (const CompareOp& op : *list)
                if (op.changed)
                    ops.push_back(
                        // A traced op by name ("op attention"), a category by its own.
                        p.phase + (list == &p.named_ops ? " op " : " ") + op.category + " " +
                        format_number("%.1f", op.us_a) + " → " +
                        format_number("%.1f µs/token", op.us_b) + " (" +
                        format_number("%+.0f%%",
                                      op.us_a > 0 ? 100.0 * (op.us_b / op.us_a - 1) : 0.0) +
                        ")");
    o << "## Summary\n\n";
    o << "- settings that differ:" << (settings.empty() ? " none" : "") << "\n";
    for (const std::string& s : settings) o << "  - " << s << "\n";
    o << "- operations that changed (more than " << int(kOpChange * 100) << "% and over "
      << int(kOpShare * 100) << "% of the phase's time):" << (ops.empty() ? " none" : "") << "\n";
    for (const std::string& s : ops) o << "  - " << s << "\n";
    if (c.first_divergence)
        o << "- token streams part at token " << *c.first_divergence << " (" << c.diverged_tokens
          << " of " << std::max(c.tokens_a, c.tokens_b) << " positions differ)\n";
    else
        o << "- identical token streams (" << c.tokens_a << " tokens)\n";

    o << "\n## Figures and settings\n\n| | " << label_a << " | " << label_b
      << " |\n|---|---|---|\n";
    for (const CompareStat& s : c.stats)
        o << "| " << (s.differs ? "**" + s.name + "**" : s.name) << " | " << s.text_a << " | "
          << s.text_b << " |\n";

    for (const ComparePhase& p : c.phases) {
        o << "\n## Time per " << (p.phase == "decode" ? "generated" : "prompt") << " token, "
          << p.phase << "\n\n";
        if (p.tokens_a == 0 && p.tokens_b == 0) {
            o << "No " << p.phase << " steps recorded in either run.\n";
            continue;
        }
        o << "Steps' wall time: " << format_number("%.1f", p.step_us_a) << " vs "
          << format_number("%.1f µs/token", p.step_us_b) << " (" << p.tokens_a << " vs "
          << p.tokens_b << " tokens; the categories are the profiler's, recorded at telemetry "
          << "level full or trace, 0 below).\n\n";
        // One table per list: the categories, then (both runs traced) the ops by name.
        const auto table = [&](const char* first, const std::vector<CompareOp>& list) {
            o << "| " << first << " | " << label_a << " µs | share | " << label_b
              << " µs | share | Δ µs | changed |\n|---|---:|---:|---:|---:|---:|---|\n";
            for (const CompareOp& op : list)
                o << "| " << table_cell_text(op.category) << " | " << format_number("%.1f", op.us_a)
                  << " | " << format_number("%.0f%%", 100 * op.share_a) << " | "
                  << format_number("%.1f", op.us_b) << " | "
                  << format_number("%.0f%%", 100 * op.share_b) << " | "
                  << format_number("%+.1f", op.us_b - op.us_a) << " | " << (op.changed ? "yes" : "")
                  << " |\n";
        };
        table("operation", p.ops);
        if (p.named_ops.empty()) continue;
        o << "\nPer operation (both runs traced; every layer summed):\n\n";
        table("op", p.named_ops);
    }

    o << "\n## Tokens\n\n";
    const int64_t n = std::max(c.tokens_a, c.tokens_b);
    const int64_t from = c.first_divergence ? std::max<int64_t>(0, *c.first_divergence - 3) : 0;
    const int64_t to = std::min<int64_t>(n, from + 12);
    if (n == 0) o << "No tokens in either run.\n";
    if (n > 0) {
        o << "| # | " << label_a << " | " << label_b << " |\n|---:|---|---|\n";
        for (int64_t i = from; i < to; ++i) {
            const auto side = [&](const RunRecord& r) {
                return size_t(i) < r.tokens.size() ? cell(r.tokens[size_t(i)].piece)
                                                   : std::string(kNone);
            };
            const bool differ = !same_token(a, b, size_t(i));
            o << "| " << (differ ? "**" + std::to_string(i) + "**" : std::to_string(i)) << " | "
              << side(a) << " | " << side(b) << " |\n";
        }
        if (to < n) o << "\n(" << n - to << " more tokens)\n";
    }
    return o.str();
}

json comparison_json(const RunComparison& c, const std::string& label_a,
                     const std::string& label_b) {
    json j;
    j["runs"] = {label_a, label_b};
    json stats = json::array();
    for (const CompareStat& s : c.stats) {
        json row = {{"name", s.name},
                    {"a", s.text_a},
                    {"b", s.text_b},
                    {"differs", s.differs},
                    {"setting", s.setting}};
        if (s.a) row["a_value"] = *s.a;
        if (s.b) row["b_value"] = *s.b;
        if (!s.unit.empty()) row["unit"] = s.unit;
        stats.push_back(row);
    }
    j["stats"] = stats;
    json phases = json::array();
    const auto op_rows = [](const std::vector<CompareOp>& list, const char* key) {
        json rows = json::array();
        for (const CompareOp& op : list)
            rows.push_back({{key, op.category},
                            {"us_per_token_a", op.us_a},
                            {"us_per_token_b", op.us_b},
                            {"share_a", op.share_a},
                            {"share_b", op.share_b},
                            {"changed", op.changed}});
        return rows;
    };
    for (const ComparePhase& p : c.phases) {
        json phase = {{"phase", p.phase},
                      {"tokens_a", p.tokens_a},
                      {"tokens_b", p.tokens_b},
                      {"step_us_per_token_a", p.step_us_a},
                      {"step_us_per_token_b", p.step_us_b},
                      {"ops", op_rows(p.ops, "category")}};
        if (!p.named_ops.empty()) phase["named_ops"] = op_rows(p.named_ops, "op");
        phases.push_back(phase);
    }
    j["phases"] = phases;
    j["tokens"] = {
        {"a", c.tokens_a},
        {"b", c.tokens_b},
        {"first_divergence", c.first_divergence ? json(*c.first_divergence) : json(nullptr)},
        {"diverged", c.diverged_tokens}};
    return j;
}

}  // namespace fluoro::app
