#include "export/json_export.h"

#include <array>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "store/prefix_tree_codec.h"
#include "store/sqlite_db.h"
#include "tensor/ggml_type.h"

namespace fluoro::app {

using nlohmann::json;

namespace {

json parse_or_string(const std::string& text) {
    json j = json::parse(text, nullptr, false);
    return j.is_discarded() ? json(text) : j;
}

std::string dump_back(const json& j) {
    return j.is_string() ? j.get<std::string>() : j.dump();
}

// Well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool valid_utf8(const std::string& s) {
    for (size_t i = 0; i < s.size();) {
        const auto c = uint8_t(s[i]);
        size_t n = 0;  // continuation bytes
        uint32_t cp = 0;
        if (c < 0x80) {
            ++i;
            continue;
        }
        if ((c & 0xE0) == 0xC0)
            n = 1, cp = c & 0x1F;
        else if ((c & 0xF0) == 0xE0)
            n = 2, cp = c & 0x0F;
        else if ((c & 0xF8) == 0xF0)
            n = 3, cp = c & 0x07;
        else
            return false;
        if (s.size() - i <= n) return false;
        for (size_t k = 1; k <= n; ++k) {
            const auto cc = uint8_t(s[i + k]);
            if ((cc & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n + 1;
    }
    return true;
}

// A prompt piece may be part of a UTF-8 sequence, which a JSON string cannot hold: such a piece
// is written as {"hex": "<its bytes>"}.
json piece_json(const std::string& p) {
    if (valid_utf8(p)) return p;
    static const char* digits = "0123456789abcdef";
    std::string hex;
    for (char ch : p) {
        hex += digits[uint8_t(ch) >> 4];
        hex += digits[uint8_t(ch) & 15];
    }
    return {{"hex", hex}};
}

std::string piece_from_json(const json& j, const std::string& where) {
    if (j.is_string()) return j.get<std::string>();
    const auto bad = [&] {
        return Error("conversation JSON: " + where +
                     ": a prompt piece must be a string or {\"hex\": \"<even number of hex "
                     "digits>\"}");
    };
    if (!j.is_object() || !j.contains("hex") || !j.at("hex").is_string()) throw bad();
    const std::string hex = j.at("hex").get<std::string>();
    if (hex.size() % 2 != 0) throw bad();
    const auto nibble = [&](char ch) -> int {
        if (ch >= '0' && ch <= '9') return ch - '0';
        if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
        if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
        throw bad();
    };
    std::string out;
    for (size_t i = 0; i < hex.size(); i += 2)
        out += char(nibble(hex[i]) * 16 + nibble(hex[i + 1]));
    return out;
}

json token_json(const TokenEvent& t) {
    json top = json::array();
    for (const auto& p : t.top) top.push_back({p.id, p.logprob});
    json j = {{"index", t.index},
              {"id", t.id},
              {"piece", t.piece},
              {"logprob", t.logprob},
              {"t_ns", t.t_ns},
              {"top", top},
              {"split", t.split},
              {"reasoning", t.reasoning},
              {"reasoning_text", t.reasoning_text},
              {"answer_text", t.answer_text}};
    // A remote run's alternatives: their texts (the ids are the attachment's numbering).
    if (!t.top_text.empty()) {
        json texts = json::array();
        for (const auto& s : t.top_text) texts.push_back(piece_json(s));
        j["top_text"] = std::move(texts);
    }
    return j;
}

json server_load_json(const ServerLoadEvent& l) {
    return {{"t_ns", l.t_ns},
            {"names", l.names},
            {"running", l.running},
            {"waiting", l.waiting},
            {"kv_usage", l.kv_usage},
            {"prefix_queries", l.prefix_queries},
            {"prefix_hits", l.prefix_hits},
            {"prompt_tokens", l.prompt_tokens},
            {"generation_tokens", l.generation_tokens},
            {"spec_draft_tokens", l.spec_draft_tokens},
            {"spec_accepted_tokens", l.spec_accepted_tokens}};
}

json step_json(const StepEvent& s) {
    json ops = json::object();
    for (size_t i = 0; i < kTimeCategories; ++i)
        ops[std::string(time_category_name(TimeCategory(int(i))))] = s.op_ns[i];
    json j = {{"index", s.index},   {"phase", step_phase_name(s.phase)},
              {"tokens", s.tokens}, {"start_ns", s.start_ns},
              {"end_ns", s.end_ns}, {"op_ns", ops}};
    if (s.experts)  // a mixture of experts: the step's routing (optional; absent before it)
        j["experts"] = {{"n_layer", s.experts->n_layer},
                        {"n_expert", s.experts->n_expert},
                        {"n_used", s.experts->n_used},
                        {"experts", s.experts->experts},
                        {"weights", s.experts->weights}};
    if (s.trace) {  // level Trace: the step's timeline (optional; absent before it)
        json spans = json::array(), workers = json::array();
        for (const OpSpan& op : s.trace->ops)
            spans.push_back(
                {op.start_ns, op.end_ns, op.name, op.layer, op.rows,
                 time_category_name(op.category), op.bytes, op.flops,
                 op.weight_type < 0 ? json(nullptr) : json(type_name(GgmlType(op.weight_type))),
                 op.shape});
        for (const WorkerBusy& w : s.trace->workers)
            workers.push_back({w.start_ns, w.end_ns, w.worker, w.tasks});
        j["trace"] = {{"names", s.trace->names},
                      {"threads", s.trace->threads},
                      {"dropped", s.trace->dropped},
                      {"ops", std::move(spans)},
                      {"workers", std::move(workers)}};
    }
    return j;
}

json run_json(const RunRecord& r, const std::map<int64_t, size_t>& message_index) {
    json j = {{"message", message_index.at(r.message_id)},
              {"kind", r.kind},
              {"model_path", r.model_path},
              {"model_name", r.model_name},
              {"model_sha256", r.model_sha256},
              {"settings", parse_or_string(r.settings_json)},
              {"hardware", parse_or_string(r.hardware_json)},
              {"program_version", r.program_version},
              {"telemetry_level", r.telemetry_level},
              {"started_at", r.started_at},
              {"prompt_tokens", r.prompt_tokens},
              {"stop_reason", r.stop_reason ? json(*r.stop_reason) : json(nullptr)},
              {"error", r.error ? json(*r.error) : json(nullptr)},
              {"n_tokens", r.n_tokens},
              {"cached_tokens", r.cached_tokens},
              {"computed_tokens", r.computed_tokens},
              {"prefill_ms", r.prefill_ms},
              {"ttft_ms", r.ttft_ms},
              {"decode_ms", r.decode_ms},
              {"decode_steps", r.decode_steps},
              {"duration_ns", r.duration_ns},
              {"drafted_tokens", r.drafted_tokens},
              {"accepted_tokens", r.accepted_tokens},
              {"reasoning_tokens", r.reasoning_tokens},
              {"reasoning_ns", r.reasoning_ns},
              {"prompt_ids", r.prompt_ids}};
    json& pieces = j["prompt_pieces"] = json::array();
    for (const auto& p : r.prompt_pieces) pieces.push_back(piece_json(p));
    json& tokens = j["tokens"] = json::array();
    for (const auto& t : r.tokens) tokens.push_back(token_json(t));
    json& steps = j["steps"] = json::array();
    for (const auto& s : r.steps) steps.push_back(step_json(s));
    json& cache = j["cache_events"] = json::array();
    for (const auto& c : r.cache_events) {
        cache.push_back({{"t_ns", c.t_ns},
                         {"prompt_tokens", c.prompt_tokens},
                         {"cached_tokens", c.cached_tokens},
                         {"computed_tokens", c.computed_tokens},
                         {"evicted_tokens", c.evicted_tokens},
                         {"source", c.source},
                         {"diverge_at", c.diverge_at},
                         {"diverge_prompt_token", c.diverge_prompt_token},
                         {"diverge_cached_token", c.diverge_cached_token},
                         {"diverge_cached_piece", piece_json(c.diverge_cached_piece)},
                         {"evicted_entries", c.evicted_entries},
                         {"cache_entries", c.cache_entries},
                         {"cache_tokens", c.cache_tokens}});
        if (!c.tree.empty()) cache.back()["tree"] = prefix_tree_json(c.tree);
    }
    if (!r.server_loads.empty()) {
        json& loads = j["server_loads"] = json::array();
        for (const auto& l : r.server_loads) loads.push_back(server_load_json(l));
    }
    json& memory = j["memory"] = json::array();
    for (const auto& m : r.memory)
        memory.push_back({{"t_ns", m.t_ns},
                          {"weights_bytes", m.weights_bytes},
                          {"kv_bytes", m.kv_bytes},
                          {"kv_used_bytes", m.kv_used_bytes},
                          {"scratch_bytes", m.scratch_bytes}});
    json& spec = j["spec_steps"] = json::array();
    for (const auto& s : r.spec_steps) {
        json drafted = json::array();
        for (const auto& d : s.drafted) drafted.push_back({d.id, d.q, d.p, d.accepted});
        spec.push_back({{"step", s.step},
                        {"t_ns", s.t_ns},
                        {"drafter", s.drafter},
                        {"accepted", s.accepted},
                        {"resampled", s.resampled},
                        {"bonus", s.bonus},
                        {"draft_ns", s.draft_ns},
                        {"verify_ns", s.verify_ns},
                        {"drafted", drafted}});
    }
    json& kv = j["kv_snapshots"] = json::array();
    for (const auto& s : r.kv_snapshots) {
        json blocks = json::array();
        for (const auto& b : s->blocks)
            blocks.push_back({b.owner, kv_block_state_name(b.state), b.tokens});
        kv.push_back({{"step", s->step},
                      {"t_ns", s->t_ns},
                      {"block_tokens", s->block_tokens},
                      {"bytes_per_token", s->bytes_per_token},
                      {"blocks", blocks}});
    }
    json& att = j["attention_snapshots"] = json::array();
    for (const auto& s : r.attention_snapshots)
        att.push_back({{"step", s->step},
                       {"t_ns", s->t_ns},
                       {"layer", s->layer},
                       {"head", s->head},
                       {"first_row", s->first_row},
                       {"n_rows", s->n_rows},
                       {"n_cols", s->n_cols},
                       {"key_begin", s->key_begin},
                       {"weights", s->weights}});
    json& stats = j["attention_stats"] = json::array();
    for (const auto& s : r.attention_stats) {
        json heads = json::array();
        for (const auto& h : s.heads)
            heads.push_back({h.entropy, h.top_k_mass, h.below_threshold, h.sink_mass});
        stats.push_back({{"step", s.step},
                         {"t_ns", s.t_ns},
                         {"n_layer", s.n_layer},
                         {"n_head", s.n_head},
                         {"top_k", s.top_k},
                         {"threshold", s.threshold},
                         {"n_keys", s.n_keys},
                         {"heads", heads}});
    }
    json& evictions = j["kv_evictions"] = json::array();
    for (const auto& e : r.kv_evictions)
        evictions.push_back({{"step", e.step},
                             {"t_ns", e.t_ns},
                             {"policy", e.policy},
                             {"budget", e.budget},
                             {"length_before", e.length_before},
                             {"ms", e.ms},
                             {"evicted", e.evicted},
                             {"kept", e.kept},
                             {"reasons", e.reasons}});
    return j;
}

// Reads a required field, naming it in the error.
template <class T>
T field(const json& j, const char* name, const std::string& where) {
    if (!j.is_object() || !j.contains(name))
        throw Error("conversation JSON: " + where + " has no field '" + name + "'");
    try {
        return j.at(name).get<T>();
    } catch (const json::exception& e) {
        throw Error("conversation JSON: " + where + "." + name + ": " + e.what());
    }
}

// A field added in format version `since`: documents of an older version may lack it (then it
// is `fallback`); newer ones must have it.
template <class T>
T field_since(const json& j, const char* name, const std::string& where, int version, int since,
              T fallback) {
    if (version < since && (!j.is_object() || !j.contains(name))) return fallback;
    return field<T>(j, name, where);
}

template <class T>
std::optional<T> optional_field(const json& j, const char* name, const std::string& where) {
    if (!j.contains(name) || j.at(name).is_null()) return std::nullopt;
    return field<T>(j, name, where);
}

KvBlockState parse_block_state(const std::string& s, const std::string& where) {
    for (int i = 0; i <= int(KvBlockState::Evicted); ++i)
        if (kv_block_state_name(KvBlockState(i)) == s) return KvBlockState(i);
    throw Error("conversation JSON: " + where + ": unknown KV block state '" + s + "'");
}

StepPhase parse_phase(const std::string& s, const std::string& where) {
    for (auto p : {StepPhase::Prefill, StepPhase::Decode, StepPhase::Draft, StepPhase::Verify})
        if (step_phase_name(p) == s) return p;
    throw Error("conversation JSON: " + where + ": unknown step phase '" + s + "'");
}

// The ggml type named `name` ("q4_K"), as ggml prints it.
std::optional<GgmlType> parse_type_name(std::string_view name) {
    for (uint32_t raw = 0; raw < 64; ++raw)
        if (const TypeTraits* t = find_type_traits(raw); t && t->name == name) return t->type;
    return std::nullopt;
}

// A step's "trace" as step_json writes it: ops as [start_ns, end_ns, name, layer, rows, category,
// bytes, flops, weight type name or null, [shape0, shape1]], worker spans as [start_ns, end_ns,
// worker, tasks].
std::shared_ptr<const StepTrace> trace_from_json(const json& x, const std::string& where) {
    auto t = std::make_shared<StepTrace>();
    t->names = field<std::vector<std::string>>(x, "names", where);
    t->threads = field<int32_t>(x, "threads", where);
    t->dropped = field<int64_t>(x, "dropped", where);
    const json ops = field<json>(x, "ops", where), workers = field<json>(x, "workers", where);
    if (!ops.is_array() || !workers.is_array())
        throw Error("conversation JSON: " + where + ": ops and workers must be arrays");
    try {
        for (const json& o : ops) {
            if (!o.is_array() || o.size() != 10) throw Error("an op is not an array of 10");
            OpSpan op;
            op.start_ns = o[0].get<int64_t>();
            op.end_ns = o[1].get<int64_t>();
            op.name = o[2].get<int32_t>();
            op.layer = o[3].get<int32_t>();
            op.rows = o[4].get<int32_t>();
            const auto cat = parse_time_category(o[5].get<std::string>());
            if (!cat) throw Error("unknown category '" + o[5].get<std::string>() + "'");
            op.category = *cat;
            op.bytes = o[6].get<double>();
            op.flops = o[7].get<double>();
            if (!o[8].is_null()) {
                const auto type = parse_type_name(o[8].get<std::string>());
                if (!type) throw Error("unknown weight type '" + o[8].get<std::string>() + "'");
                op.weight_type = int32_t(*type);
            }
            op.shape = o[9].get<std::array<int32_t, 2>>();
            t->ops.push_back(op);
        }
        for (const json& o : workers) {
            if (!o.is_array() || o.size() != 4) throw Error("a worker span is not an array of 4");
            t->workers.push_back({o[0].get<int64_t>(), o[1].get<int64_t>(), o[2].get<int32_t>(),
                                  o[3].get<int32_t>()});
        }
    } catch (const json::exception& e) {
        throw Error("conversation JSON: " + where + ": " + e.what());
    } catch (const Error& e) {
        throw Error("conversation JSON: " + where + ": " + e.what());
    }
    if (const std::string why = step_trace_error(*t); !why.empty())
        throw Error("conversation JSON: " + where + ": " + why);
    return t;
}

RunRecord run_from_json(const json& j, const std::string& where, size_t n_messages, int version) {
    RunRecord r;
    const auto message = field<size_t>(j, "message", where);
    if (message >= n_messages)
        throw Error("conversation JSON: " + where + ".message " + std::to_string(message) +
                    " is not a message index");
    r.message_id = int64_t(message);
    r.kind = field<std::string>(j, "kind", where);
    r.model_path = field<std::string>(j, "model_path", where);
    r.model_name = field<std::string>(j, "model_name", where);
    r.model_sha256 = field<std::string>(j, "model_sha256", where);
    r.settings_json = dump_back(field<json>(j, "settings", where));
    r.hardware_json = dump_back(field<json>(j, "hardware", where));
    r.program_version = field<std::string>(j, "program_version", where);
    r.telemetry_level = field<std::string>(j, "telemetry_level", where);
    r.started_at = field<std::string>(j, "started_at", where);
    r.prompt_tokens = field<int64_t>(j, "prompt_tokens", where);
    r.stop_reason = optional_field<std::string>(j, "stop_reason", where);
    r.error = optional_field<std::string>(j, "error", where);
    r.n_tokens = field<int64_t>(j, "n_tokens", where);
    r.cached_tokens = field<int64_t>(j, "cached_tokens", where);
    r.computed_tokens = field<int64_t>(j, "computed_tokens", where);
    r.prefill_ms = field<double>(j, "prefill_ms", where);
    r.ttft_ms = field<double>(j, "ttft_ms", where);
    r.decode_ms = field<double>(j, "decode_ms", where);
    r.decode_steps = field<int64_t>(j, "decode_steps", where);
    r.duration_ns = field<int64_t>(j, "duration_ns", where);
    r.drafted_tokens = field_since<int64_t>(j, "drafted_tokens", where, version, 2, 0);
    r.accepted_tokens = field_since<int64_t>(j, "accepted_tokens", where, version, 2, 0);
    r.reasoning_tokens = field_since<int64_t>(j, "reasoning_tokens", where, version, 4, 0);
    r.reasoning_ns = field_since<int64_t>(j, "reasoning_ns", where, version, 4, 0);
    r.prompt_ids = field_since<std::vector<int32_t>>(j, "prompt_ids", where, version, 2, {});
    for (const auto& p : field_since<json>(j, "prompt_pieces", where, version, 2, json::array()))
        r.prompt_pieces.push_back(piece_from_json(p, where + ".prompt_pieces"));
    for (const auto& t : field<json>(j, "tokens", where)) {
        TokenEvent e;
        const std::string w = where + ".tokens";
        e.index = field<int64_t>(t, "index", w);
        e.id = field<int32_t>(t, "id", w);
        e.piece = field<std::string>(t, "piece", w);
        e.logprob = field<float>(t, "logprob", w);
        e.t_ns = field<int64_t>(t, "t_ns", w);
        for (const auto& p : field<json>(t, "top", w))
            e.top.push_back({p.at(0).get<int32_t>(), p.at(1).get<float>()});
        e.split = field_since<bool>(t, "split", w, version, 4, false);
        e.reasoning = field_since<bool>(t, "reasoning", w, version, 4, false);
        e.reasoning_text = field_since<std::string>(t, "reasoning_text", w, version, 4, "");
        e.answer_text = field_since<std::string>(t, "answer_text", w, version, 4, "");
        if (t.contains("top_text")) {
            for (const auto& s : field<json>(t, "top_text", w))
                e.top_text.push_back(piece_from_json(s, w + ".top_text"));
            if (e.top_text.size() != e.top.size())
                throw Error(w + ": token " + std::to_string(e.index) + " has " +
                            std::to_string(e.top.size()) + " alternatives but " +
                            std::to_string(e.top_text.size()) + " texts");
        }
        r.tokens.push_back(std::move(e));
    }
    for (const auto& s : field<json>(j, "steps", where)) {
        StepEvent e;
        const std::string w = where + ".steps";
        e.index = field<int64_t>(s, "index", w);
        e.phase = parse_phase(field<std::string>(s, "phase", w), w);
        e.tokens = field<int64_t>(s, "tokens", w);
        e.start_ns = field<int64_t>(s, "start_ns", w);
        e.end_ns = field<int64_t>(s, "end_ns", w);
        const json ops = field<json>(s, "op_ns", w);
        for (size_t i = 0; i < kTimeCategories; ++i) {
            const std::string name(time_category_name(TimeCategory(int(i))));
            e.op_ns[i] = ops.value(name, int64_t(0));
        }
        if (s.contains("experts")) {
            const json& x = s["experts"];
            const std::string wx = w + ".experts";
            auto routing = std::make_shared<ExpertRouting>();
            routing->n_layer = field<int32_t>(x, "n_layer", wx);
            routing->n_expert = field<int32_t>(x, "n_expert", wx);
            routing->n_used = field<int32_t>(x, "n_used", wx);
            routing->n_tokens = e.tokens;
            routing->experts = field<std::vector<int32_t>>(x, "experts", wx);
            routing->weights = field<std::vector<float>>(x, "weights", wx);
            if (const std::string why = expert_routing_error(*routing); !why.empty())
                throw Error("conversation JSON: " + wx + " of step " + std::to_string(e.index) +
                            ": " + why);
            e.experts = std::move(routing);
        }
        if (s.contains("trace"))
            e.trace = trace_from_json(s["trace"], w + ".trace of step " + std::to_string(e.index));
        r.steps.push_back(e);
    }
    for (const auto& c : field<json>(j, "cache_events", where)) {
        const std::string w = where + ".cache_events";
        PrefixCacheEvent e;
        e.prompt_tokens = field<int64_t>(c, "prompt_tokens", w);
        e.cached_tokens = field<int64_t>(c, "cached_tokens", w);
        e.computed_tokens = field<int64_t>(c, "computed_tokens", w);
        e.evicted_tokens = field<int64_t>(c, "evicted_tokens", w);
        e.t_ns = field<int64_t>(c, "t_ns", w);
        // Added in a later version: absent in older exports.
        e.source = c.value("source", std::string("none"));
        e.diverge_at = c.value("diverge_at", int64_t(-1));
        e.diverge_prompt_token = c.value("diverge_prompt_token", int32_t(-1));
        e.diverge_cached_token = c.value("diverge_cached_token", int32_t(-1));
        if (c.contains("diverge_cached_piece"))
            e.diverge_cached_piece = piece_from_json(c["diverge_cached_piece"], w);
        e.evicted_entries = c.value("evicted_entries", int64_t(0));
        e.cache_entries = c.value("cache_entries", int64_t(0));
        e.cache_tokens = c.value("cache_tokens", int64_t(0));
        if (c.contains("tree")) e.tree = prefix_tree_from_json(c["tree"], w);
        r.cache_events.push_back(std::move(e));
    }
    if (j.contains("server_loads"))
        for (const auto& l : field<json>(j, "server_loads", where)) {
            const std::string w = where + ".server_loads";
            ServerLoadEvent e;
            e.t_ns = field<int64_t>(l, "t_ns", w);
            e.names = field<std::string>(l, "names", w);
            e.running = field<double>(l, "running", w);
            e.waiting = field<double>(l, "waiting", w);
            e.kv_usage = field<double>(l, "kv_usage", w);
            e.prefix_queries = field<double>(l, "prefix_queries", w);
            e.prefix_hits = field<double>(l, "prefix_hits", w);
            e.prompt_tokens = field<double>(l, "prompt_tokens", w);
            e.generation_tokens = field<double>(l, "generation_tokens", w);
            e.spec_draft_tokens = field<double>(l, "spec_draft_tokens", w);
            e.spec_accepted_tokens = field<double>(l, "spec_accepted_tokens", w);
            r.server_loads.push_back(std::move(e));
        }
    for (const auto& m : field<json>(j, "memory", where)) {
        const std::string w = where + ".memory";
        r.memory.push_back(
            MemoryCounters{0, field<int64_t>(m, "weights_bytes", w),
                           field<int64_t>(m, "kv_bytes", w), field<int64_t>(m, "kv_used_bytes", w),
                           field<int64_t>(m, "scratch_bytes", w), field<int64_t>(m, "t_ns", w)});
    }
    for (const auto& s : field<json>(j, "spec_steps", where)) {
        const std::string w = where + ".spec_steps";
        SpecStep e;
        e.step = field<int64_t>(s, "step", w);
        e.t_ns = field<int64_t>(s, "t_ns", w);
        e.drafter = field<std::string>(s, "drafter", w);
        e.accepted = field<int32_t>(s, "accepted", w);
        e.resampled = field<int32_t>(s, "resampled", w);
        e.bonus = field_since<int32_t>(s, "bonus", w, version, 2, -1);
        e.draft_ns = field_since<int64_t>(s, "draft_ns", w, version, 2, 0);
        e.verify_ns = field_since<int64_t>(s, "verify_ns", w, version, 2, 0);
        for (const auto& d : field<json>(s, "drafted", w))
            e.drafted.push_back({d.at(0).get<int32_t>(), d.at(1).get<float>(), d.at(2).get<float>(),
                                 d.at(3).get<bool>()});
        r.spec_steps.push_back(std::move(e));
    }
    for (const auto& s : field<json>(j, "kv_snapshots", where)) {
        const std::string w = where + ".kv_snapshots";
        auto e = std::make_shared<KvSnapshot>();
        e->step = field<int64_t>(s, "step", w);
        e->t_ns = field<int64_t>(s, "t_ns", w);
        e->block_tokens = field<int32_t>(s, "block_tokens", w);
        e->bytes_per_token = field<int64_t>(s, "bytes_per_token", w);
        for (const auto& b : field<json>(s, "blocks", w))
            e->blocks.push_back({b.at(0).get<int32_t>(),
                                 parse_block_state(b.at(1).get<std::string>(), w),
                                 b.at(2).get<int32_t>()});
        r.kv_snapshots.push_back(std::move(e));
    }
    for (const auto& s : field<json>(j, "attention_snapshots", where)) {
        const std::string w = where + ".attention_snapshots";
        auto e = std::make_shared<AttentionSnapshot>();
        e->step = field<int64_t>(s, "step", w);
        e->t_ns = field<int64_t>(s, "t_ns", w);
        e->layer = field<int32_t>(s, "layer", w);
        e->head = field<int32_t>(s, "head", w);
        e->first_row = field<int64_t>(s, "first_row", w);
        e->n_rows = field<int64_t>(s, "n_rows", w);
        e->n_cols = field<int64_t>(s, "n_cols", w);
        e->key_begin = field_since<int64_t>(s, "key_begin", w, version, 2, 0);
        if (e->key_begin < 0) throw Error("conversation JSON: " + w + ": key_begin is negative");
        e->weights = field<std::vector<float>>(s, "weights", w);
        if (!e->shape_ok())
            throw Error("conversation JSON: " + w + ": weights do not match n_rows x n_cols (" +
                        std::to_string(e->n_rows) + " x " + std::to_string(e->n_cols) + ", " +
                        std::to_string(e->weights.size()) + " weights)");
        r.attention_snapshots.push_back(std::move(e));
    }
    for (const auto& s :
         field_since<json>(j, "attention_stats", where, version, 2, json::array())) {
        const std::string w = where + ".attention_stats";
        AttentionStats e;
        e.step = field<int64_t>(s, "step", w);
        e.t_ns = field<int64_t>(s, "t_ns", w);
        e.n_layer = field<int32_t>(s, "n_layer", w);
        e.n_head = field<int32_t>(s, "n_head", w);
        e.top_k = field<int32_t>(s, "top_k", w);
        e.threshold = field<float>(s, "threshold", w);
        e.n_keys = field<int64_t>(s, "n_keys", w);
        for (const auto& h : field<json>(s, "heads", w)) {
            if (!h.is_array() || h.size() != 4)
                throw Error("conversation JSON: " + w +
                            ".heads: each head is [entropy, top_k_mass, below_threshold, "
                            "sink_mass]");
            try {
                e.heads.push_back(
                    {h[0].get<float>(), h[1].get<float>(), h[2].get<float>(), h[3].get<float>()});
            } catch (const json::exception& x) {
                throw Error("conversation JSON: " + w + ".heads: " + x.what());
            }
        }
        if (e.n_layer < 0 || e.n_head < 0 ||
            uint64_t(e.n_layer) * uint64_t(e.n_head) != e.heads.size())
            throw Error("conversation JSON: " + w + ": heads do not match n_layer x n_head");
        r.attention_stats.push_back(std::move(e));
    }
    for (const auto& s : field_since<json>(j, "kv_evictions", where, version, 3, json::array())) {
        const std::string w = where + ".kv_evictions";
        KvEviction e;
        e.step = field<int64_t>(s, "step", w);
        e.t_ns = field<int64_t>(s, "t_ns", w);
        e.policy = field<std::string>(s, "policy", w);
        e.budget = field<int64_t>(s, "budget", w);
        e.length_before = field<int64_t>(s, "length_before", w);
        e.ms = field<double>(s, "ms", w);
        e.evicted = field<std::vector<int64_t>>(s, "evicted", w);
        e.kept = field<std::vector<int64_t>>(s, "kept", w);
        e.reasons = field<std::vector<uint8_t>>(s, "reasons", w);
        if (e.reasons.size() != e.kept.size())
            throw Error("conversation JSON: " + w + ": reasons do not match kept");
        r.kv_evictions.push_back(std::move(e));
    }
    return r;
}

}  // namespace

json conversation_to_json(const ConversationRecord& c) {
    std::map<int64_t, size_t> index;
    json messages = json::array();
    for (const auto& m : c.messages) {
        json parent = nullptr;
        if (m.parent_id) parent = index.at(*m.parent_id);
        index[m.id] = messages.size();
        messages.push_back({{"parent", parent},
                            {"role", m.role},
                            {"content", m.content},
                            {"complete", m.complete},
                            {"created_at", m.created_at}});
    }
    json runs = json::array();
    for (const auto& r : c.runs) runs.push_back(run_json(r, index));
    return {{"format", kConversationFormat},
            {"version", kConversationFormatVersion},
            {"title", c.title},
            {"system_prompt", c.system_prompt},
            {"created_at", c.created_at},
            {"messages", messages},
            {"runs", runs}};
}

namespace {

ConversationRecord parse_conversation(const json& j) {
    if (!j.is_object() || j.value("format", "") != kConversationFormat)
        throw Error(std::string("not a Fluoroscope conversation export (\"format\" is not \"") +
                    kConversationFormat + "\")");
    const int version = field<int>(j, "version", "document");
    if (version > kConversationFormatVersion)
        throw Error("conversation JSON version " + std::to_string(version) +
                    " is newer than this build reads (" +
                    std::to_string(kConversationFormatVersion) + ")");
    ConversationRecord c;
    c.title = field<std::string>(j, "title", "document");
    c.system_prompt = field<std::string>(j, "system_prompt", "document");
    c.created_at = field<std::string>(j, "created_at", "document");
    const json messages = field<json>(j, "messages", "document");
    for (size_t i = 0; i < messages.size(); ++i) {
        const std::string w = "messages[" + std::to_string(i) + "]";
        MessageRecord m;
        m.id = int64_t(i);
        if (const auto p = optional_field<size_t>(messages[i], "parent", w)) {
            if (*p >= i) throw Error("conversation JSON: " + w + ".parent must precede it");
            m.parent_id = int64_t(*p);
        }
        m.role = field<std::string>(messages[i], "role", w);
        m.content = field<std::string>(messages[i], "content", w);
        m.complete = field<bool>(messages[i], "complete", w);
        m.created_at = field<std::string>(messages[i], "created_at", w);
        c.messages.push_back(std::move(m));
    }
    const json runs = field<json>(j, "runs", "document");
    for (size_t i = 0; i < runs.size(); ++i) {
        RunRecord r =
            run_from_json(runs[i], "runs[" + std::to_string(i) + "]", messages.size(), version);
        r.id = int64_t(i);
        c.runs.push_back(std::move(r));
    }
    return c;
}

}  // namespace

ConversationRecord conversation_from_json(const json& j) {
    // The field readers name what is missing; a value of the wrong kind deeper down (a token's
    // top alternative that is not a pair, messages that are not an array) surfaces as a JSON
    // library exception, which is still an error in the document, not an internal one.
    try {
        return parse_conversation(j);
    } catch (const json::exception& e) {
        throw Error(std::string("conversation JSON: malformed document: ") + e.what());
    }
}

ConversationRecord conversation_from_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot read " + path.string());
    std::stringstream buf;
    buf << in.rdbuf();
    const auto j = nlohmann::json::parse(buf.str(), nullptr, false);
    if (j.is_discarded()) throw Error(path.string() + " is not valid JSON");
    try {
        return conversation_from_json(j);
    } catch (const Error& e) {
        throw Error(path.string() + ": " + e.what());
    }
}

}  // namespace fluoro::app
