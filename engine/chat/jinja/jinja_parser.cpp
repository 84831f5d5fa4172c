#include "chat/jinja/jinja_parser.h"

#include <charconv>
#include <cstdlib>
#include <set>

#include "chat/jinja/jinja_error.h"
#include "chat/jinja/jinja_filters.h"

namespace fluoro::jinja {
namespace {

// Nesting bound for expressions and blocks: recursion in the parser and the interpreter stays far
// from the stack's end on hostile input ("((((((..." or 10 000 nested ifs).
constexpr int kMaxDepth = 200;

class Parser {
  public:
    Parser(std::string_view src, const std::vector<Token>& tokens) : src_(src), toks_(tokens) {}

    Body run() {
        Body body = statements({});
        if (cur().type != TokenType::End) fail(cur().offset, "unexpected '" + tag_name_ + "'");
        return body;
    }

  private:
    // --- token helpers ---
    const Token& cur() const { return toks_[i_]; }
    const Token& peek(std::size_t n = 1) const {
        return toks_[i_ + n < toks_.size() ? i_ + n : toks_.size() - 1];
    }
    void next() {
        if (i_ + 1 < toks_.size()) ++i_;
    }
    bool is_op(std::string_view op) const {
        return cur().type == TokenType::Operator && cur().text == op;
    }
    bool is_name(std::string_view n) const {
        return cur().type == TokenType::Name && cur().text == n;
    }
    bool skip_op(std::string_view op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool skip_name(std::string_view n) {
        if (!is_name(n)) return false;
        next();
        return true;
    }
    [[noreturn]] void fail(std::size_t at, const std::string& what) const {
        throw TemplateSyntaxError(position(src_, at) + ": " + what);
    }
    [[noreturn]] void unsupported(std::size_t at, const std::string& what) const {
        throw UnsupportedError(position(src_, at) + ": " + what);
    }
    std::string describe(const Token& t) const {
        switch (t.type) {
            case TokenType::End:
                return "end of template";
            case TokenType::BlockEnd:
                return "'%}'";
            case TokenType::VariableEnd:
                return "'}}'";
            case TokenType::Text:
                return "template text";
            default:
                return "'" + t.text + "'";
        }
    }
    void expect_op(std::string_view op) {
        if (!skip_op(op))
            fail(cur().offset, "expected '" + std::string(op) + "', got " + describe(cur()));
    }
    std::string expect_name() {
        if (cur().type != TokenType::Name)
            fail(cur().offset, "expected a name, got " + describe(cur()));
        std::string n = cur().text;
        next();
        return n;
    }
    void expect_block_end() {
        if (cur().type != TokenType::BlockEnd)
            fail(cur().offset, "expected '%}', got " + describe(cur()));
        next();
    }

    struct DepthGuard {
        Parser& p;
        DepthGuard(Parser& parser, std::size_t at) : p(parser) {
            if (++p.depth_ > kMaxDepth) p.fail(at, "template nested too deeply");
        }
        ~DepthGuard() { --p.depth_; }
    };
    // Inside an if/elif test or body or a conditional expression Jinja2 reports an unknown
    // filter or test only when it runs; elsewhere it refuses the template.
    struct SoftGuard {
        Parser& p;
        bool saved;
        SoftGuard(Parser& parser, bool soft) : p(parser), saved(parser.soft_) { p.soft_ = soft; }
        ~SoftGuard() { p.soft_ = saved; }
    };

    static ExprPtr node(ExprKind k, std::size_t at) {
        auto e = std::make_unique<Expr>();
        e->kind = k;
        e->offset = at;
        return e;
    }

    // --- statements ---

    // Statements until a block tag whose name is in `end` (left current, after its '{%').
    Body statements(const std::set<std::string>& end) {
        Body body;
        while (true) {
            const Token& t = cur();
            if (t.type == TokenType::End) {
                if (!end.empty())
                    fail(t.offset, "unexpected end of template, expected '" + *end.rbegin() + "'");
                return body;
            }
            if (t.type == TokenType::Text) {
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::Text;
                s->offset = t.offset;
                s->text = t.text;
                body.push_back(std::move(s));
                next();
            } else if (t.type == TokenType::VariableBegin) {
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::Output;
                s->offset = t.offset;
                next();
                s->expr = tuple_expr(true);
                if (cur().type != TokenType::VariableEnd)
                    fail(cur().offset, "expected '}}', got " + describe(cur()));
                next();
                body.push_back(std::move(s));
            } else if (t.type == TokenType::BlockBegin) {
                next();
                if (cur().type != TokenType::Name)
                    fail(cur().offset, "expected a tag name, got " + describe(cur()));
                tag_name_ = cur().text;
                if (end.count(cur().text)) return body;
                if (auto s = statement()) body.push_back(std::move(s));
            } else {
                fail(t.offset, "unexpected " + describe(t));
            }
        }
    }

    StmtPtr statement() {
        const std::size_t at = cur().offset;
        DepthGuard guard(*this, at);
        const std::string tag = expect_name();
        if (tag == "if") return if_stmt(at);
        if (tag == "for") return for_stmt(at);
        if (tag == "set") return set_stmt(at);
        if (tag == "macro") return macro_stmt(at);
        if (tag == "filter") return filter_stmt(at);
        if (tag == "break" || tag == "continue") {
            if (loop_depth_ == 0) fail(at, "'" + tag + "' outside a loop");
            expect_block_end();
            auto s = std::make_unique<Stmt>();
            s->kind = tag == "break" ? StmtKind::Break : StmtKind::Continue;
            s->offset = at;
            return s;
        }
        if (tag == "generation") {  // transformers' extension: marks assistant text, renders as is
            expect_block_end();
            auto s = std::make_unique<Stmt>();
            s->kind = StmtKind::If;
            s->offset = at;
            auto always = node(ExprKind::Literal, at);
            always->literal = Value(true);
            s->branches.emplace_back(std::move(always), statements({"endgeneration"}));
            next();
            expect_block_end();
            return s;
        }
        static const std::set<std::string> kKnown = {"block", "extends", "include", "import",
                                                     "from",  "call",    "with",    "autoescape",
                                                     "raw",   "print"};
        if (kKnown.count(tag)) unsupported(at, "the '" + tag + "' tag is not supported");
        fail(at, "Encountered unknown tag '" + tag + "'.");
    }

    StmtPtr if_stmt(std::size_t at) {
        SoftGuard soft(*this, true);
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::If;
        s->offset = at;
        ExprPtr test = tuple_expr(false);
        while (true) {
            expect_block_end();
            Body body = statements({"elif", "else", "endif"});
            s->branches.emplace_back(std::move(test), std::move(body));
            const std::string tag = expect_name();
            if (tag == "elif") {
                test = tuple_expr(false);
                continue;
            }
            if (tag == "else") {
                expect_block_end();
                s->branches.emplace_back(nullptr, statements({"endif"}));
                next();
            }
            expect_block_end();
            return s;
        }
    }

    // Assignment targets: a name, or names separated by commas, optionally in parentheses.
    void targets(Stmt& s) {
        const bool paren = skip_op("(");
        s.targets.push_back(expect_name());
        while (skip_op(",")) {
            s.unpack = true;
            if (cur().type != TokenType::Name) break;
            s.targets.push_back(expect_name());
        }
        if (paren) {
            s.unpack = true;
            expect_op(")");
        }
    }

    StmtPtr for_stmt(std::size_t at) {
        SoftGuard soft(*this, false);
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::For;
        s->offset = at;
        targets(*s);
        if (!skip_name("in")) fail(cur().offset, "expected 'in', got " + describe(cur()));
        s->expr = tuple_expr(false, false);
        if (skip_name("if")) s->filter = expression();
        if (is_name("recursive"))
            unsupported(cur().offset, "recursive for loops are not supported");
        expect_block_end();
        ++loop_depth_;
        s->body = statements({"else", "endfor"});
        --loop_depth_;
        if (expect_name() == "else") {
            expect_block_end();
            s->else_body = statements({"endfor"});
            next();
        }
        expect_block_end();
        return s;
    }

    StmtPtr set_stmt(std::size_t at) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::Set;
        s->offset = at;
        if (cur().type == TokenType::Name && peek().type == TokenType::Operator &&
            peek().text == ".") {
            s->targets.push_back(expect_name());
            next();
            s->targets.push_back(expect_name());
            s->attr_target = true;
        } else {
            targets(*s);
        }
        if (skip_op("=")) {
            s->expr = tuple_expr(true);
            expect_block_end();
            return s;
        }
        if (s->unpack || s->attr_target) fail(cur().offset, "expected '=', got " + describe(cur()));
        s->kind = StmtKind::SetBlock;
        if (is_op("|")) s->filter = filter_chain(nullptr);
        expect_block_end();
        const int saved_loops = loop_depth_;
        s->body = statements({"endset"});
        loop_depth_ = saved_loops;
        next();
        expect_block_end();
        return s;
    }

    StmtPtr macro_stmt(std::size_t at) {
        SoftGuard soft(*this, false);
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::Macro;
        s->offset = at;
        s->name = expect_name();
        expect_op("(");
        while (!skip_op(")")) {
            if (!s->params.empty()) expect_op(",");
            if (skip_op(")")) break;
            std::string p = expect_name();
            ExprPtr def;
            if (skip_op("=")) def = expression();
            s->params.emplace_back(std::move(p), std::move(def));
        }
        expect_block_end();
        const int saved_loops = loop_depth_;
        loop_depth_ = 0;  // break/continue cannot cross a macro boundary
        s->body = statements({"endmacro"});
        loop_depth_ = saved_loops;
        next();
        expect_block_end();
        return s;
    }

    StmtPtr filter_stmt(std::size_t at) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::FilterBlock;
        s->offset = at;
        s->filter = filter_chain(nullptr, /*leading_pipe=*/false);
        expect_block_end();
        s->body = statements({"endfilter"});
        next();
        expect_block_end();
        return s;
    }

    // --- expressions ---

    // A comma-separated list becomes a tuple; `{{ a, b }}` and `set x = 1, 2` allow it.
    ExprPtr tuple_expr(bool allow_tuple, bool with_condexpr = true) {
        const std::size_t at = cur().offset;
        ExprPtr first = with_condexpr ? expression() : or_expr();
        if (!allow_tuple && !is_op(",")) return first;
        if (!is_op(",")) return first;
        auto t = node(ExprKind::TupleLit, at);
        t->args.push_back(std::move(first));
        while (skip_op(",")) {
            if (at_expression_end()) break;
            t->args.push_back(with_condexpr ? expression() : or_expr());
        }
        return t;
    }

    bool at_expression_end() const {
        const auto t = cur().type;
        return t == TokenType::BlockEnd || t == TokenType::VariableEnd || t == TokenType::End ||
               is_op(")") || is_op("]") || is_op("}") || is_name("if") || is_name("in");
    }

    ExprPtr expression() {
        DepthGuard guard(*this, cur().offset);
        const std::size_t at = cur().offset;
        ExprPtr e = or_expr();
        while (is_name("if")) {
            SoftGuard soft(*this, true);
            next();
            auto c = node(ExprKind::CondExpr, at);
            c->target = or_expr();
            c->args.push_back(std::move(e));
            c->args.push_back(skip_name("else") ? expression() : nullptr);
            e = std::move(c);
        }
        return e;
    }

    ExprPtr binary(ExprPtr left, std::string op, ExprPtr right, std::size_t at) {
        auto b = node(ExprKind::Binary, at);
        b->name = std::move(op);
        b->target = std::move(left);
        b->args.push_back(std::move(right));
        return b;
    }

    ExprPtr or_expr() {
        const std::size_t at = cur().offset;
        ExprPtr e = and_expr();
        while (skip_name("or")) e = binary(std::move(e), "or", and_expr(), at);
        return e;
    }

    ExprPtr and_expr() {
        const std::size_t at = cur().offset;
        ExprPtr e = not_expr();
        while (skip_name("and")) e = binary(std::move(e), "and", not_expr(), at);
        return e;
    }

    ExprPtr not_expr() {
        const std::size_t at = cur().offset;
        if (skip_name("not")) {
            DepthGuard guard(*this, at);
            auto u = node(ExprKind::Unary, at);
            u->name = "not";
            u->target = not_expr();
            return u;
        }
        return compare();
    }

    ExprPtr compare() {
        const std::size_t at = cur().offset;
        ExprPtr first = math1();
        ExprPtr cmp;
        while (true) {
            std::string op;
            if (cur().type == TokenType::Operator &&
                (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                 cur().text == ">" || cur().text == "<=" || cur().text == ">=")) {
                op = cur().text;
                next();
            } else if (is_name("in")) {
                op = "in";
                next();
            } else if (is_name("not") && peek().type == TokenType::Name && peek().text == "in") {
                op = "not in";
                next();
                next();
            } else {
                break;
            }
            if (!cmp) {
                cmp = node(ExprKind::Compare, at);
                cmp->target = std::move(first);
            }
            cmp->ops.push_back(op);
            cmp->args.push_back(math1());
        }
        return cmp ? std::move(cmp) : std::move(first);
    }

    ExprPtr math1() {
        const std::size_t at = cur().offset;
        ExprPtr e = concat();
        while (is_op("+") || is_op("-")) {
            std::string op = cur().text;
            next();
            e = binary(std::move(e), op, concat(), at);
        }
        return e;
    }

    ExprPtr concat() {
        const std::size_t at = cur().offset;
        ExprPtr e = math2();
        while (skip_op("~")) e = binary(std::move(e), "~", math2(), at);
        return e;
    }

    ExprPtr math2() {
        const std::size_t at = cur().offset;
        ExprPtr e = pow_expr();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            std::string op = cur().text;
            next();
            e = binary(std::move(e), op, pow_expr(), at);
        }
        return e;
    }

    ExprPtr pow_expr() {
        const std::size_t at = cur().offset;
        ExprPtr e = unary(true);
        while (skip_op("**")) e = binary(std::move(e), "**", unary(true), at);
        return e;
    }

    ExprPtr unary(bool with_filter) {
        const std::size_t at = cur().offset;
        DepthGuard guard(*this, at);
        ExprPtr e;
        if (is_op("-") || is_op("+")) {
            auto u = node(ExprKind::Unary, at);
            u->name = cur().text;
            next();
            u->target = unary(false);
            e = std::move(u);
        } else {
            e = postfix(primary());
        }
        if (with_filter) e = filter_expr(std::move(e));
        return e;
    }

    ExprPtr primary() {
        const Token& t = cur();
        const std::size_t at = t.offset;
        DepthGuard guard(*this, at);
        if (t.type == TokenType::Name) {
            auto e = node(ExprKind::Literal, at);
            if (t.text == "true" || t.text == "True")
                e->literal = Value(true);
            else if (t.text == "false" || t.text == "False")
                e->literal = Value(false);
            else if (t.text == "none" || t.text == "None")
                e->literal = Value::none();
            else {
                e->kind = ExprKind::Name;
                e->name = t.text;
            }
            next();
            return e;
        }
        if (t.type == TokenType::String) {
            std::string s;
            while (cur().type ==
                   TokenType::String) {  // adjacent literals concatenate, as in Python
                s += cur().text;
                next();
            }
            auto e = node(ExprKind::Literal, at);
            e->literal = Value(std::move(s));
            return e;
        }
        if (t.type == TokenType::Integer) {
            std::int64_t v = 0;
            auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
            if (r.ec != std::errc())
                unsupported(at, "integer literal " + t.text + " exceeds 64 bits");
            auto e = node(ExprKind::Literal, at);
            e->literal = Value(v);
            next();
            return e;
        }
        if (t.type == TokenType::Float) {
            auto e = node(ExprKind::Literal, at);
            e->literal = Value(std::strtod(t.text.c_str(), nullptr));
            next();
            return e;
        }
        if (skip_op("(")) {
            if (skip_op(")")) {
                auto e = node(ExprKind::TupleLit, at);
                return e;
            }
            ExprPtr first = expression();
            if (skip_op(")")) return first;
            auto tup = node(ExprKind::TupleLit, at);
            tup->args.push_back(std::move(first));
            while (skip_op(",")) {
                if (is_op(")")) break;
                tup->args.push_back(expression());
            }
            expect_op(")");
            return tup;
        }
        if (skip_op("[")) {
            auto e = node(ExprKind::ListLit, at);
            while (!skip_op("]")) {
                if (!e->args.empty()) expect_op(",");
                if (skip_op("]")) break;
                e->args.push_back(expression());
            }
            return e;
        }
        if (skip_op("{")) {
            auto e = node(ExprKind::DictLit, at);
            while (!skip_op("}")) {
                if (!e->args.empty()) expect_op(",");
                if (skip_op("}")) break;
                e->args.push_back(expression());
                expect_op(":");
                e->args.push_back(expression());
            }
            return e;
        }
        fail(at, "unexpected " + describe(t));
    }

    ExprPtr postfix(ExprPtr e) {
        while (true) {
            const std::size_t at = cur().offset;
            if (skip_op(".")) {
                auto g = node(ExprKind::GetAttr, at);
                g->target = std::move(e);
                if (cur().type == TokenType::Name) {
                    g->name = expect_name();
                } else if (cur().type == TokenType::Integer) {  // foo.0 is foo[0]
                    g->kind = ExprKind::GetItem;
                    auto idx = node(ExprKind::Literal, cur().offset);
                    idx->literal = Value(static_cast<std::int64_t>(std::atoll(cur().text.c_str())));
                    g->args.push_back(std::move(idx));
                    next();
                } else {
                    fail(cur().offset, "expected an attribute name, got " + describe(cur()));
                }
                e = std::move(g);
            } else if (skip_op("[")) {
                e = subscript(std::move(e), at);
            } else if (is_op("(")) {
                e = call(std::move(e));
            } else {
                return e;
            }
        }
    }

    ExprPtr subscript(ExprPtr target, std::size_t at) {
        DepthGuard guard(*this, at);
        ExprPtr parts[3];
        int colons = 0;
        while (true) {
            if (is_op(":")) {
                if (++colons > 2) fail(cur().offset, "too many ':' in a slice");
                next();
            } else if (is_op("]")) {
                next();
                break;
            } else {
                if (parts[colons])
                    fail(cur().offset, "expected ':' or ']', got " + describe(cur()));
                parts[colons] = expression();
            }
        }
        auto g = node(colons ? ExprKind::Slice : ExprKind::GetItem, at);
        g->target = std::move(target);
        if (!colons && !parts[0]) fail(at, "empty subscript");
        g->args.push_back(std::move(parts[0]));
        if (colons) {
            g->args.push_back(std::move(parts[1]));
            g->args.push_back(std::move(parts[2]));
        }
        return g;
    }

    void call_args(Expr& e) {
        expect_op("(");
        while (!skip_op(")")) {
            if (!e.args.empty() || !e.kwargs.empty()) expect_op(",");
            if (skip_op(")")) break;
            if (is_op("*") || is_op("**"))
                unsupported(cur().offset, "*args / **kwargs in calls are not supported");
            if (cur().type == TokenType::Name && peek().type == TokenType::Operator &&
                peek().text == "=") {
                std::string k = expect_name();
                next();
                e.kwargs.emplace_back(std::move(k), expression());
            } else {
                if (!e.kwargs.empty())
                    fail(cur().offset, "positional argument after keyword argument");
                e.args.push_back(expression());
            }
        }
    }

    ExprPtr call(ExprPtr target) {
        auto c = node(ExprKind::Call, cur().offset);
        c->target = std::move(target);
        call_args(*c);
        return c;
    }

    void check_known(const Expr& e, bool is_filter) {
        const bool ours = is_filter ? has_filter(e.name) : has_test(e.name);
        if (ours) return;
        const std::string what = is_filter ? "filter" : "test";
        if (is_filter ? jinja2_has_filter(e.name) : jinja2_has_test(e.name))
            unsupported(e.offset, "the '" + e.name + "' " + what + " is not supported");
        if (!soft_) fail(e.offset, "No " + what + " named '" + e.name + "'.");
        // In a soft frame Jinja2 fails only if it runs; the interpreter does the same.
    }

    ExprPtr filter_chain(ExprPtr e, bool leading_pipe = true) {
        bool first = true;
        while ((first && !leading_pipe) || skip_op("|")) {
            first = false;
            auto f = node(ExprKind::Filter, cur().offset);
            f->name = expect_name();
            while (skip_op(".")) f->name += "." + expect_name();
            check_known(*f, true);
            f->target = std::move(e);
            if (is_op("(")) call_args(*f);
            e = std::move(f);
        }
        return e;
    }

    ExprPtr filter_expr(ExprPtr e) {
        while (true) {
            if (is_op("|")) {
                e = filter_chain(std::move(e));
            } else if (is_name("is")) {
                next();
                auto t = node(ExprKind::Test, cur().offset);
                t->negated = skip_name("not");
                t->offset = cur().offset;
                t->name = expect_name();
                while (skip_op(".")) t->name += "." + expect_name();
                check_known(*t, false);
                t->target = std::move(e);
                if (is_op("(")) {
                    call_args(*t);
                } else if ((cur().type == TokenType::Name || cur().type == TokenType::String ||
                            cur().type == TokenType::Integer || cur().type == TokenType::Float ||
                            is_op("(") || is_op("[") || is_op("{")) &&
                           !is_name("else") && !is_name("or") && !is_name("and")) {
                    if (is_name("is"))
                        fail(cur().offset, "You cannot chain multiple tests with is");
                    t->args.push_back(postfix(primary()));
                }
                e = std::move(t);
            } else if (is_op("(")) {
                e = call(std::move(e));
            } else {
                return e;
            }
        }
    }

    std::string_view src_;
    const std::vector<Token>& toks_;
    std::size_t i_ = 0;
    int depth_ = 0;
    int loop_depth_ = 0;
    bool soft_ = false;
    std::string tag_name_;
};

}  // namespace

Body parse(std::string_view normalized_source, const std::vector<Token>& tokens) {
    return Parser(normalized_source, tokens).run();
}

}  // namespace fluoro::jinja
