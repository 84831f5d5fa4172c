// libFuzzer target for the Jinja chat-template interpreter: any bytes as a template, rendered
// against a small conversation with tight step and output bounds. Parse and render errors are
// expected (fluoro::Error); a crash, a sanitizer report, a hang or a leak is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "chat/jinja/jinja_template.h"

namespace {

fluoro::jinja::Value conversation() {
    using fluoro::jinja::Value;
    Value user = Value::dict();
    user.dict_data_mut().set(Value("role"), Value("user"));
    user.dict_data_mut().set(Value("content"), Value("hi <b> \xc3\xa9"));
    Value ctx = Value::dict();
    ctx.dict_data_mut().set(Value("messages"), Value::list({user, user}));
    ctx.dict_data_mut().set(Value("add_generation_prompt"), Value(true));
    ctx.dict_data_mut().set(Value("tools"), Value::none());
    ctx.dict_data_mut().set(Value("bos_token"), Value("<s>"));
    return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const fluoro::jinja::Value ctx = conversation();
    fluoro::jinja::RenderOptions options;
    options.max_steps = 20000;  // keeps each input fast; the bound itself is what is tested
    options.max_output_bytes = 1 << 16;
    options.now = 0;
    try {
        const std::string_view text(reinterpret_cast<const char*>(data), size);
        fluoro::jinja::Template::parse(text).render(ctx, options);
    } catch (const fluoro::Error&) {
    }
    return 0;
}
