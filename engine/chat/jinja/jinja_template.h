// Renders the Jinja2 chat templates models ship in tokenizer.chat_template, the way transformers
// does (jinja2's ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, loop controls,
// its tojson, raise_exception and strftime_now). Our own interpreter: parse once, render many.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "chat/jinja/jinja_error.h"
#include "chat/jinja/jinja_value.h"

namespace fluoro::jinja {

struct RenderOptions {
    // Bounds that keep a hostile template from taking the process: rendered text; work, counted
    // per statement, loop iteration, and item (or 64 bytes) of each value an operator, filter,
    // lookup or call touches; nested macro calls.
    std::size_t max_output_bytes = std::size_t{16} << 20;
    std::int64_t max_steps = 10'000'000;
    int max_call_depth = 64;
    // What strftime_now() formats (local time); absent: the current time.
    std::optional<std::time_t> now;
};

struct ParsedTemplate;

class Template {
  public:
    // Throws TemplateSyntaxError or UnsupportedError, with line:column.
    static Template parse(std::string_view source);

    // `context` is a dict of the template's variables (messages, tools, add_generation_prompt,
    // bos_token, ...). Throws TemplateRuntimeError (TemplateRaised for raise_exception).
    std::string render(const Value& context, const RenderOptions& options = {}) const;

  private:
    std::shared_ptr<const ParsedTemplate> parsed_;
};

}  // namespace fluoro::jinja
