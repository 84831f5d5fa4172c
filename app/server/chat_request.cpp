#include "server/chat_request.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include <exception>
#include <vector>

namespace fluoro::app {
namespace {

using nlohmann::json;

// Concatenation by appending (GCC 12 warns falsely on "literal" + std::string).
template <class... A>
std::string cat(const A&... a) {
    std::string s;
    ((s += a), ...);
    return s;
}

std::string type_name_of(const json& v) {
    return v.type_name();
}

[[noreturn]] void wrong_type(const std::string& param, const char* expected, const json& v) {
    throw RequestError(cat("'", param, "' must be ", expected, ", not ", type_name_of(v)), param);
}

// The field when present and not null.
const json* field(const json& obj, const char* name) {
    const auto it = obj.find(name);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
}

double number(const json& obj, const char* name, double fallback) {
    const json* v = field(obj, name);
    if (!v) return fallback;
    if (!v->is_number()) wrong_type(name, "a number", *v);
    return v->get<double>();
}

std::string message_content(const json& content, const std::string& param) {
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) wrong_type(param, "a string or an array of text parts", content);
    std::string text;
    for (size_t i = 0; i < content.size(); ++i) {
        const json& part = content[i];
        const std::string p = cat(param, "[", std::to_string(i), "]");
        if (!part.is_object()) wrong_type(p, "an object", part);
        const json* type = field(part, "type");
        if (!type || !type->is_string() || type->get<std::string>() != "text")
            throw RequestError(cat("only text content parts are supported ('", p, ".type')"),
                               cat(p, ".type"));
        const json* t = field(part, "text");
        if (!t || !t->is_string()) wrong_type(cat(p, ".text"), "a string", t ? *t : json());
        text += t->get<std::string>();
    }
    return text;
}

// An assistant message's tool_calls: [{"id", "type": "function", "function": {"name",
// "arguments": JSON text of an object}}], as OpenAI sends them back.
// The "function" object of a tool definition or a call at `q`, and its non-empty "name".
const json& function_object(const json& entry, const std::string& q) {
    const json* fn = field(entry, "function");
    if (!fn || !fn->is_object())
        throw RequestError(cat("'", q, ".function' is required (an object)"), cat(q, ".function"));
    return *fn;
}
std::string function_name(const json& fn, const std::string& q) {
    const json* name = field(fn, "name");
    if (!name || !name->is_string() || name->get<std::string>().empty())
        throw RequestError(cat("'", q, ".function.name' is required"), cat(q, ".function.name"));
    return name->get<std::string>();
}

std::vector<ChatToolCall> parse_tool_calls(const json& calls, const std::string& p) {
    if (!calls.is_array()) wrong_type(p, "an array", calls);
    std::vector<ChatToolCall> out;
    for (size_t i = 0; i < calls.size(); ++i) {
        const std::string q = cat(p, "[", std::to_string(i), "]");
        const json& c = calls[i];
        if (!c.is_object()) wrong_type(q, "an object", c);
        const json& fn = function_object(c, q);
        const std::string name = function_name(fn, q);
        const json* args = field(fn, "arguments");
        std::string text = "{}";
        if (args && args->is_string()) {
            text = args->get<std::string>();
            json parsed;
            try {
                parsed = json::parse(text);
            } catch (const json::parse_error&) {
                throw RequestError(cat("'", q, ".function.arguments' is not valid JSON"),
                                   cat(q, ".function.arguments"));
            }
            if (!parsed.is_object())
                throw RequestError(cat("'", q, ".function.arguments' must be a JSON object"),
                                   cat(q, ".function.arguments"));
        } else if (args && args->is_object()) {
            text = args->dump();
        } else if (args) {
            wrong_type(cat(q, ".function.arguments"), "a JSON object text", *args);
        }
        const json* id = field(c, "id");
        out.push_back(
            {id && id->is_string() ? id->get<std::string>() : cat("call_", std::to_string(i)), name,
             std::move(text)});
    }
    return out;
}

// tools: [{"type": "function", "function": {"name", "description"?, "parameters"?}}], handed to
// the template as they came (key order kept); every entry checked so a typo is a 400, not a
// template error.
std::string parse_tools(const json& tools) {
    if (!tools.is_array()) wrong_type("tools", "an array", tools);
    for (size_t i = 0; i < tools.size(); ++i) {
        const std::string q = cat("tools[", std::to_string(i), "]");
        const json& t = tools[i];
        if (!t.is_object()) wrong_type(q, "an object", t);
        const json* type = field(t, "type");
        if (!type || !type->is_string() || type->get<std::string>() != "function")
            throw RequestError(cat("'", q, ".type' must be \"function\""), cat(q, ".type"));
        const json& fn = function_object(t, q);
        (void)function_name(fn, q);
        if (const json* params = field(fn, "parameters"); params && !params->is_object())
            wrong_type(cat(q, ".function.parameters"), "an object (a JSON Schema)", *params);
    }
    return tools.dump();
}

std::vector<ChatMessage> parse_messages(const json& body) {
    const json* msgs = field(body, "messages");
    if (!msgs) throw RequestError("'messages' is required", "messages");
    if (!msgs->is_array()) wrong_type("messages", "an array", *msgs);
    if (msgs->empty()) throw RequestError("'messages' must not be empty", "messages");
    std::vector<ChatMessage> out;
    for (size_t i = 0; i < msgs->size(); ++i) {
        const json& m = (*msgs)[i];
        const std::string p = cat("messages[", std::to_string(i), "]");
        if (!m.is_object()) wrong_type(p, "an object", m);
        const json* role = field(m, "role");
        if (!role) throw RequestError(cat("'", p, ".role' is required"), cat(p, ".role"));
        if (!role->is_string()) wrong_type(cat(p, ".role"), "a string", *role);
        std::string r = role->get<std::string>();
        if (r == "developer") r = "system";
        if (r == "system") {
            if (i != 0)
                throw RequestError(cat("only the first message may be a system message (", p, ")"),
                                   cat(p, ".role"));
        } else if (r != "user" && r != "assistant" && r != "tool") {
            throw RequestError(cat("unsupported role '", r, "' (", p,
                                   "): use system, developer, user, assistant or tool"),
                               cat(p, ".role"));
        }
        ChatMessage msg(r, "");
        const json* calls = r == "assistant" ? field(m, "tool_calls") : nullptr;
        if (calls) msg.tool_calls = parse_tool_calls(*calls, cat(p, ".tool_calls"));
        const json* content = field(m, "content");
        if (content) {
            msg.content = message_content(*content, cat(p, ".content"));
        } else if (!calls) {  // an assistant turn that only calls tools has none
            throw RequestError(cat("'", p, ".content' is required"), cat(p, ".content"));
        }
        // A null content (an assistant turn that only calls tools) reaches the template as "":
        // many templates concatenate contents, and None breaks them (SmolLM2's: str + None), as
        // llama.cpp's server also passes "" to templates that need a string.
        if (const json* rc = r == "assistant" ? field(m, "reasoning_content") : nullptr) {
            if (!rc->is_string()) wrong_type(cat(p, ".reasoning_content"), "a string", *rc);
            msg.reasoning_content = rc->get<std::string>();
        }
        if (r == "tool") {
            const json* id = field(m, "tool_call_id");
            if (!id || !id->is_string())
                throw RequestError(cat("'", p, ".tool_call_id' is required (a string)"),
                                   cat(p, ".tool_call_id"));
            msg.tool_call_id = id->get<std::string>();
            if (const json* name = field(m, "name"); name && name->is_string())
                msg.name = name->get<std::string>();
        }
        out.push_back(std::move(msg));
    }
    if (out.back().role != "user" && out.back().role != "tool")
        throw RequestError("the last message must be a user message or a tool result", "messages");
    if (out.size() == 1 && out.front().role == "system")
        throw RequestError("'messages' needs a user message", "messages");
    return out;
}

// "stop": null, a string or an array of at most 4 non-empty strings (OpenAI's limits), each of
// at most 256 bytes.
std::vector<std::string> parse_stop(const json& stop) {
    constexpr size_t kMaxStops = 4, kMaxStopBytes = 256;
    std::vector<std::string> out;
    if (stop.is_null()) return out;
    if (stop.is_string()) {
        if (!stop.get<std::string>().empty()) out.push_back(stop.get<std::string>());
    } else if (stop.is_array()) {
        if (stop.size() > kMaxStops)
            throw RequestError(
                cat("'stop' holds at most 4 sequences, not ", std::to_string(stop.size())), "stop");
        for (const json& s : stop) {
            if (!s.is_string()) wrong_type("stop", "a string or an array of strings", s);
            if (s.get<std::string>().empty())
                throw RequestError("'stop' sequences must not be empty", "stop");
            out.push_back(s.get<std::string>());
        }
    } else {
        wrong_type("stop", "a string or an array of strings", stop);
    }
    for (const std::string& s : out)
        if (s.size() > kMaxStopBytes)
            throw RequestError(
                cat("a 'stop' sequence is at most 256 bytes, not ", std::to_string(s.size())),
                "stop");
    return out;
}

}  // namespace

namespace {

json parse_body(std::string_view body) {
    json j;
    try {
        j = json::parse(body);
    } catch (const json::parse_error& e) {
        throw RequestError(cat("malformed JSON body: ", e.what()), "");
    }
    if (!j.is_object()) throw RequestError("the request body must be a JSON object", "");
    return j;
}

// The fields both endpoints read alike: model, stream, stream_options, max_tokens, n, stop.
void parse_common(const json& j, ChatRequest& r) {
    if (const json* model = field(j, "model")) {
        if (!model->is_string()) wrong_type("model", "a string", *model);
        r.model = model->get<std::string>();
    }
    if (const json* s = field(j, "stream")) {
        if (!s->is_boolean()) wrong_type("stream", "a boolean", *s);
        r.stream = s->get<bool>();
    }
    if (const json* so = field(j, "stream_options")) {
        if (!so->is_object()) wrong_type("stream_options", "an object", *so);
        if (const json* u = field(*so, "include_usage")) {
            if (!u->is_boolean()) wrong_type("stream_options.include_usage", "a boolean", *u);
            r.include_usage = u->get<bool>();
        }
    }
    for (const char* name : {"max_completion_tokens", "max_tokens"}) {
        const json* v = field(j, name);
        if (!v) continue;
        if (!v->is_number_integer()) wrong_type(name, "an integer", *v);
        const int64_t n = v->get<int64_t>();
        if (n < 1)
            throw RequestError(cat("'", name, "' must be at least 1, not ", std::to_string(n)),
                               name);
        r.complete.max_tokens = n;
        break;
    }
    if (const json* n = field(j, "n")) {
        if (!n->is_number_integer()) wrong_type("n", "an integer", *n);
        const int64_t v = n->get<int64_t>();
        if (v < 1 || v > kMaxChoices)
            throw RequestError(cat("'n' must be between 1 and ", std::to_string(kMaxChoices),
                                   ", not ", std::to_string(v)),
                               "n");
        r.n = int(v);
    }
    if (const json* stop = field(j, "stop")) r.complete.stop_strings = parse_stop(*stop);
}

// The request's sampling over the server's defaults: temperature, top_p, the penalties, seed.
void parse_sampling(const json& j, const SamplingParams& defaults, ChatRequest& r) {
    SamplingParams p = defaults;
    p.n_probs = std::max(p.n_probs, int32_t(r.top_logprobs));  // the alternatives reported
    p.temperature = float(number(j, "temperature", p.temperature));
    p.top_p = float(number(j, "top_p", p.top_p));
    p.frequency_penalty = float(number(j, "frequency_penalty", p.frequency_penalty));
    p.presence_penalty = float(number(j, "presence_penalty", p.presence_penalty));
    if (const json* seed = field(j, "seed")) {
        if (!seed->is_number_integer()) wrong_type("seed", "an integer", *seed);
        p.seed =
            seed->is_number_unsigned() ? seed->get<uint64_t>() : uint64_t(seed->get<int64_t>());
    }
    try {
        p.validate();
    } catch (const std::exception& e) {
        throw RequestError(e.what(), "");
    }
    r.complete.sampling = p;
}

}  // namespace

ChatRequest parse_chat_request(std::string_view body, const SamplingParams& defaults) {
    const json j = parse_body(body);
    ChatRequest r;
    r.complete.messages = parse_messages(j);
    parse_common(j, r);
    std::string tools_json;
    if (const json* tools = field(j, "tools"); tools && !(tools->is_array() && tools->empty()))
        tools_json = parse_tools(*tools);
    if (const json* choice = field(j, "tool_choice")) {
        // "auto" (the default with tools) and "none" (the tools are not offered) are honoured;
        // forcing a call needs constrained decoding, which the engine does not have yet.
        const std::string c = choice->is_string() ? choice->get<std::string>() : std::string();
        if (c == "none") {
            tools_json.clear();
        } else if (c != "auto") {
            throw RequestError(
                "tool_choice 'required' or a named function needs constrained "
                "decoding, which this server does not have yet; use \"auto\"",
                "tool_choice");
        }
    }
    if (const json* ptc = field(j, "parallel_tool_calls"); ptc && !ptc->is_boolean())
        wrong_type("parallel_tool_calls", "a boolean", *ptc);
    r.complete.extras.tools_json = tools_json;
    if (const json* kw = field(j, "chat_template_kwargs")) {
        if (!kw->is_object()) wrong_type("chat_template_kwargs", "an object", *kw);
        for (const auto& [k, v] : kw->items()) {
            if (k != "enable_thinking")
                throw RequestError(
                    cat("chat_template_kwargs '", k, "' is not supported (only enable_thinking)"),
                    "chat_template_kwargs");
            if (!v.is_boolean()) wrong_type("chat_template_kwargs.enable_thinking", "a boolean", v);
            r.complete.extras.enable_thinking = v.get<bool>();
        }
    }
    if (field(j, "functions")) throw RequestError("functions are not supported", "functions");
    if (const json* lp = field(j, "logprobs")) {
        if (!lp->is_boolean()) wrong_type("logprobs", "a boolean", *lp);
        r.logprobs = lp->get<bool>();
    }
    if (const json* top = field(j, "top_logprobs")) {
        if (!top->is_number_integer()) wrong_type("top_logprobs", "an integer", *top);
        const int64_t n = top->get<int64_t>();
        if (n < 0 || n > 20)
            throw RequestError(cat("'top_logprobs' must be 0 to 20, not ", std::to_string(n)),
                               "top_logprobs");
        if (n > 0 && !r.logprobs)
            throw RequestError("'top_logprobs' needs 'logprobs': true", "top_logprobs");
        r.top_logprobs = int(n);
    }
    if (const json* rf = field(j, "response_format")) {
        const json* t = rf->is_object() ? field(*rf, "type") : nullptr;
        const std::string type = t && t->is_string() ? t->get<std::string>() : "";
        if (type == "json_object")
            r.complete.json_object = true;  // decoded under decode/json_constraint.h
        else if (type != "text")
            throw RequestError(
                "only response_format {\"type\":\"text\"} and {\"type\":\"json_object\"} "
                "are supported (json_schema is not)",
                "response_format");
    }

    parse_sampling(j, defaults, r);
    return r;
}

ChatRequest parse_completion_request(std::string_view body, const SamplingParams& defaults) {
    const json j = parse_body(body);
    ChatRequest r;
    r.legacy = true;
    const json* prompt = field(j, "prompt");
    if (!prompt) throw RequestError("'prompt' is required", "prompt");
    // A string, or an array holding one string (several prompts would be n > 1 replies).
    const json* one = prompt;
    if (prompt->is_array()) {
        if (prompt->size() != 1 || !(*prompt)[0].is_string())
            throw RequestError(
                "'prompt' must be a string or an array of one string (token-id "
                "prompts and several prompts are not supported)",
                "prompt");
        one = &(*prompt)[0];
    }
    if (!one->is_string()) wrong_type("prompt", "a string", *one);
    if (one->get<std::string>().empty()) throw RequestError("'prompt' must not be empty", "prompt");
    // Plain text completion: the prompt as it stands, no chat template (Complete::raw).
    r.complete.messages = {{"user", one->get<std::string>()}};
    r.complete.raw = true;
    r.complete.max_tokens = 16;  // the legacy API's default
    parse_common(j, r);
    if (const json* echo = field(j, "echo"); echo && !(echo->is_boolean() && !echo->get<bool>()))
        throw RequestError("'echo' is not supported", "echo");
    if (const json* suffix = field(j, "suffix"); suffix && !suffix->is_null())
        throw RequestError("'suffix' (insertion) is not supported", "suffix");
    if (const json* bo = field(j, "best_of");
        bo && !(bo->is_number_integer() && bo->get<int64_t>() == 1))
        throw RequestError("only best_of = 1 is supported", "best_of");
    if (const json* lp = field(j, "logprobs"); lp && !lp->is_null())
        throw RequestError(
            "'logprobs' in the legacy completions format is not supported yet; "
            "/v1/chat/completions has logprobs and top_logprobs",
            "logprobs");
    parse_sampling(j, defaults, r);
    return r;
}

}  // namespace fluoro::app
