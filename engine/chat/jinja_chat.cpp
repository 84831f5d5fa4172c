#include "chat/jinja_chat.h"

namespace fluoro {

RenderedChat render_chat_jinja(const jinja::Template& tmpl, std::span<const ChatMessage> messages,
                               const JinjaChatInput& in) {
    using jinja::Value;
    std::vector<Value> list;
    list.reserve(messages.size());
    for (const auto& m : messages) {
        Value msg = Value::dict();
        msg.dict_data_mut().set(Value("role"), Value(m.role));
        msg.dict_data_mut().set(Value("content"), Value(m.content));
        list.push_back(std::move(msg));
    }
    Value ctx = Value::dict();
    auto& d = ctx.dict_data_mut();
    d.set(Value("messages"), Value::list(std::move(list)));
    d.set(Value("tools"), Value::none());  // transformers passes both, None when absent
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
