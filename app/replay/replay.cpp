#include "replay/replay.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

namespace fluoro::app {
namespace {

int64_t time_of(const Event& e) {
    return std::visit(
        [](const auto& v) -> int64_t {
            if constexpr (requires { v.t_ns; })
                return v.t_ns;
            else if constexpr (requires { v.end_ns; })
                return v.end_ns;
            else if constexpr (requires { v->t_ns; })
                return v->t_ns;
            else
                return 0;
        },
        e);
}

const MessageRecord* find_message(const ConversationRecord& c, int64_t id) {
    for (const auto& m : c.messages)
        if (m.id == id) return &m;
    return nullptr;
}

RunStarted started_of(const ConversationRecord& c, const RunRecord& r) {
    RunStarted s;
    s.run = uint64_t(r.id);
    s.conversation = uint64_t(c.id);
    s.kind = r.kind == "regenerate" ? RunKind::Regenerate
             : r.kind == "edit"     ? RunKind::Edit
                                    : RunKind::Send;
    s.system_prompt = c.system_prompt;
    s.model_path = r.model_path;
    s.model_name = r.model_name;
    s.prompt_tokens = r.prompt_tokens;
    s.prompt_ids = r.prompt_ids;
    s.prompt_pieces = r.prompt_pieces;
    s.level = parse_telemetry_level(r.telemetry_level).value_or(TelemetryLevel::Off);
    // The history: messages on the branch up to the reply's parent.
    std::vector<const MessageRecord*> branch = message_branch(c, r.message_id);
    if (!branch.empty()) branch.pop_back();  // the reply
    if (s.kind != RunKind::Regenerate && !branch.empty() && branch.back()->role == "user") {
        s.user_text = branch.back()->content;
        s.kept_messages = int64_t(branch.size()) - 1;
    } else {
        s.kept_messages = int64_t(branch.size());
    }
    const auto settings = nlohmann::json::parse(r.settings_json, nullptr, false);
    if (settings.is_object()) {
        s.max_tokens = settings.value("max_tokens", int64_t(0));
        s.ctx = settings.value("ctx", int64_t(0));
        s.kv_type = settings.value("kv_type", "");
        s.sampling.temperature = settings.value("temperature", s.sampling.temperature);
        s.sampling.top_k = settings.value("top_k", s.sampling.top_k);
        s.sampling.top_p = settings.value("top_p", s.sampling.top_p);
        s.sampling.min_p = settings.value("min_p", s.sampling.min_p);
        s.sampling.seed = settings.value("seed", s.sampling.seed);
        s.raw = settings.value("raw", false);
    }
    const auto hw = nlohmann::json::parse(r.hardware_json, nullptr, false);
    if (hw.is_object()) {
        s.backend = hw.value("backend", "");
        s.threads = hw.value("threads", 0);
        s.arch = hw.value("arch", "");
    }
    return s;
}

}  // namespace

std::vector<const MessageRecord*> message_branch(const ConversationRecord& c, int64_t message_id) {
    std::vector<const MessageRecord*> branch;
    for (const MessageRecord* m = find_message(c, message_id); m;
         m = m->parent_id ? find_message(c, *m->parent_id) : nullptr) {
        branch.push_back(m);
        if (branch.size() > c.messages.size()) return {};  // a cycle: not a branch
    }
    std::reverse(branch.begin(), branch.end());
    return branch;
}

std::vector<ChatMessage> run_history(const ConversationRecord& c, const RunRecord& r) {
    std::vector<ChatMessage> out;
    for (const MessageRecord* m : message_branch(c, r.message_id)) {
        if (m->role != "user" && m->role != "assistant") continue;
        out.push_back({m->role, m->content});
    }
    return out;
}

std::vector<Event> run_events(const ConversationRecord& c, const RunRecord& r) {
    std::vector<Event> body;
    const auto add = [&](auto v) {
        v.run = uint64_t(r.id);
        body.emplace_back(std::move(v));
    };
    for (const auto& s : r.steps) add(s);
    for (const auto& t : r.tokens) add(t);
    for (const auto& e : r.cache_events) add(e);
    for (const auto& m : r.memory) add(m);
    for (const auto& s : r.spec_steps) add(s);
    for (const auto& s : r.kv_snapshots) {
        auto copy = std::make_shared<KvSnapshot>(*s);
        copy->run = uint64_t(r.id);
        body.emplace_back(std::shared_ptr<const KvSnapshot>(std::move(copy)));
    }
    for (const auto& s : r.attention_snapshots) {
        auto copy = std::make_shared<AttentionSnapshot>(*s);
        copy->run = uint64_t(r.id);
        body.emplace_back(std::shared_ptr<const AttentionSnapshot>(std::move(copy)));
    }
    for (const auto& s : r.attention_stats) add(s);
    for (const auto& e : r.kv_evictions) add(e);
    // Live, a step is emitted right before its token: order by time, steps first at a tie.
    std::stable_sort(body.begin(), body.end(),
                     [](const Event& a, const Event& b) { return time_of(a) < time_of(b); });
    std::vector<Event> out;
    out.reserve(body.size() + 2);
    out.emplace_back(started_of(c, r));
    for (auto& e : body) out.push_back(std::move(e));
    RunFinished f;
    f.run = uint64_t(r.id);
    f.stop = r.stop_reason.value_or("interrupted");
    f.error = r.error.value_or("");
    for (const auto& m : c.messages)
        if (m.id == r.message_id) f.text = m.content;
    f.n_tokens = r.n_tokens;
    f.prompt_tokens = r.prompt_tokens;
    f.cached_tokens = r.cached_tokens;
    f.computed_tokens = r.computed_tokens;
    f.prefill_ms = r.prefill_ms;
    f.ttft_ms = r.ttft_ms;
    f.decode_ms = r.decode_ms;
    f.decode_steps = r.decode_steps;
    f.drafted_tokens = r.drafted_tokens;
    f.accepted_tokens = r.accepted_tokens;
    f.reasoning_tokens = r.reasoning_tokens;
    f.reasoning_ns = r.reasoning_ns;
    for (const auto& t : r.tokens) {  // the split as it was made live (schema v6 rows)
        f.reasoning_text += t.reasoning_text;
        f.answer_text += t.answer_text;
    }
    f.t_ns = std::max(r.duration_ns, out.size() > 1 ? time_of(out.back()) : 0);
    out.emplace_back(std::move(f));
    return out;
}

size_t replay(const std::vector<Event>& events, EventStream& out, const ReplayOptions& opt) {
    const auto start = std::chrono::steady_clock::now();
    size_t n = 0;
    for (const auto& e : events) {
        if (opt.cancel && opt.cancel->load()) break;
        if (opt.speed > 0) {
            const auto due =
                start + std::chrono::nanoseconds(int64_t(double(time_of(e)) / opt.speed));
            // Sleep in short slices so a cancel lands quickly.
            while (std::chrono::steady_clock::now() < due) {
                if (opt.cancel && opt.cancel->load()) return n;
                std::this_thread::sleep_until(std::min(
                    due, std::chrono::steady_clock::now() + std::chrono::milliseconds(20)));
            }
        }
        out.push(e);
        ++n;
    }
    return n;
}

}  // namespace fluoro::app
