#include "chat/jinja/jinja_template.h"

#include "chat/jinja/jinja_eval.h"
#include "chat/jinja/jinja_lexer.h"
#include "chat/jinja/jinja_parser.h"

namespace fluoro::jinja {

struct ParsedTemplate {
    std::string source;  // normalized: error positions and the AST's offsets refer to it
    Body body;
};

Template Template::parse(std::string_view source) {
    auto parsed = std::make_shared<ParsedTemplate>();
    parsed->source = normalize_source(source);
    parsed->body = jinja::parse(parsed->source, tokenize(parsed->source));
    Template t;
    t.parsed_ = std::move(parsed);
    return t;
}

std::string Template::render(const Value& context, const RenderOptions& options) const {
    return execute(parsed_->source, parsed_->body, context, options);
}

}  // namespace fluoro::jinja
