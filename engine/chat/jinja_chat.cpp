#include "chat/jinja_chat.h"

#include "chat/json_to_jinja.h"

namespace fluoro {

RenderedChat render_chat_jinja(const jinja::Template& tmpl, std::span<const ChatMessage> messages,
                               const JinjaChatInput& in) {
    using jinja::Value;
    std::vector<Value> list;
    list.reserve(messages.size());
    for (const auto& m : messages) {
        Value msg = Value::dict();
        auto& md = msg.dict_data_mut();
        md.set(Value("role"), Value(m.role));
        md.set(Value("content"), m.content_null ? Value::none() : Value(m.content));
        if (!m.tool_calls.empty()) {
            std::vector<Value> calls;
            for (const auto& c : m.tool_calls) {
                Value fn = Value::dict();
                fn.dict_data_mut().set(Value("name"), Value(c.name));
                fn.dict_data_mut().set(
                    Value("arguments"),
                    json_to_jinja(c.arguments, "tool call '" + c.name + "' arguments"));
                Value call = Value::dict();
                call.dict_data_mut().set(Value("id"), Value(c.id));
                call.dict_data_mut().set(Value("type"), Value("function"));
                call.dict_data_mut().set(Value("function"), std::move(fn));
                calls.push_back(std::move(call));
            }
            md.set(Value("tool_calls"), Value::list(std::move(calls)));
        }
        if (!m.tool_call_id.empty()) md.set(Value("tool_call_id"), Value(m.tool_call_id));
        if (!m.name.empty()) md.set(Value("name"), Value(m.name));
        if (!m.reasoning_content.empty())
            md.set(Value("reasoning_content"), Value(m.reasoning_content));
        list.push_back(std::move(msg));
    }
    Value ctx = Value::dict();
    auto& d = ctx.dict_data_mut();
    d.set(Value("messages"), Value::list(std::move(list)));
    // transformers passes both, None when absent.
    d.set(Value("tools"),
          in.tools_json.empty() ? Value::none() : json_to_jinja(in.tools_json, "tools"));
    d.set(Value("documents"), Value::none());
    d.set(Value("add_generation_prompt"), Value(in.add_generation_prompt));
    d.set(Value("bos_token"), Value(in.bos_token));
    d.set(Value("eos_token"), Value(in.eos_token));
    if (in.enable_thinking) d.set(Value("enable_thinking"), Value(*in.enable_thinking));

    RenderedChat out;
    out.text = tmpl.render(ctx);
    if (!in.bos_token.empty() && out.text.starts_with(in.bos_token)) {
        out.text.erase(0, in.bos_token.size());
        out.template_bos = true;
    }
    return out;
}

}  // namespace fluoro
