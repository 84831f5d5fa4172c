#include "chat/jinja/jinja_eval.h"

#include <ctime>
#include <map>

#include "chat/jinja/jinja_access.h"
#include "chat/jinja/jinja_error.h"
#include "chat/jinja/jinja_filters.h"
#include "chat/jinja/jinja_lexer.h"

namespace fluoro::jinja {
namespace {

// Jinja2's sandbox refuses range() longer than this (MAX_RANGE); templates never need more.
constexpr std::int64_t kMaxRange = 100000;

struct Scope {
    std::map<std::string, Value, std::less<>> vars;
    std::shared_ptr<Scope> parent;
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { Normal, Break, Continue };

class Interpreter {
  public:
    Interpreter(std::string_view src, const Value& context, const RenderOptions& options)
        : src_(src), context_(context), opt_(options) {
        if (!context_.is_dict() && !context_.is_undefined())
            throw TemplateRuntimeError("the render context must be a dict, got " +
                                       context_.type_name());
        add_globals();
    }

    std::string run(const Body& body) {
        auto root = std::make_shared<Scope>();
        root_ = root;
        std::string out;
        exec(body, root, out);
        return out;
    }

  private:
    // --- errors carry the position of the innermost construct that failed ---
    template <typename F>
    auto at(std::size_t offset, F&& f) -> decltype(f()) {
        try {
            return f();
        } catch (const TemplateRaised&) {
            throw;
        } catch (const TemplateSyntaxError&) {
            throw;
        } catch (const TemplateRuntimeError& e) {
            if (positioned_) throw;
            positioned_ = true;
            throw TemplateRuntimeError(position(src_, offset) + ": " + e.what());
        } catch (const UnsupportedError& e) {
            if (positioned_) throw;
            positioned_ = true;
            throw UnsupportedError(position(src_, offset) + ": " + e.what());
        }
    }

    // One unit per statement and loop iteration, and per item (or 64 bytes) of every value an
    // operator, filter, lookup or call works on: copying a long list on each iteration of a long
    // loop is what a hostile template would do to run for hours, and it pays for the items.
    void step(std::int64_t units = 1) {
        steps_ += units;
        if (steps_ > opt_.max_steps)
            throw TemplateRuntimeError("template ran more than " + std::to_string(opt_.max_steps) +
                                       " steps");
    }

    void emit(std::string& out, std::string_view text) {
        emitted_ += text.size();
        if (emitted_ > opt_.max_output_bytes)
            throw TemplateRuntimeError("template output exceeds " +
                                       std::to_string(opt_.max_output_bytes) + " bytes");
        out += text;
    }

    // --- names ---
    Value lookup(const ScopePtr& scope, const std::string& name) const {
        for (const Scope* s = scope.get(); s; s = s->parent.get()) {
            auto it = s->vars.find(name);
            if (it != s->vars.end()) return it->second;
        }
        if (context_.is_dict())
            if (const Value* v = context_.dict_data().find(Value(name))) return *v;
        auto g = globals_.find(name);
        if (g != globals_.end()) return g->second;
        return Value::undefined("'" + name + "' is undefined");
    }

    void add_globals() {
        globals_["range"] = Value::function("range", [](const CallArgs& a) {
            std::int64_t start = 0, stop = 0, stp = 1;
            auto num = [](const Value& v) {
                if (!v.is_int() && !v.is_bool())
                    throw TemplateRuntimeError("'" + v.type_name() +
                                               "' object cannot be interpreted as an integer");
                return v.as_int();
            };
            if (a.positional.size() == 1) {
                stop = num(a.positional[0]);
            } else if (a.positional.size() == 2 || a.positional.size() == 3) {
                start = num(a.positional[0]);
                stop = num(a.positional[1]);
                if (a.positional.size() == 3) stp = num(a.positional[2]);
            } else {
                throw TemplateRuntimeError("range expected 1 to 3 arguments");
            }
            if (stp == 0) throw TemplateRuntimeError("range() arg 3 must not be zero");
            std::vector<Value> out;
            for (std::int64_t i = start; stp > 0 ? i < stop : i > stop; i += stp) {
                if (static_cast<std::int64_t>(out.size()) >= kMaxRange)
                    throw TemplateRuntimeError(
                        "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
                out.emplace_back(i);
            }
            return Value::list(std::move(out));
        });
        auto make_dict = [](bool ns) {
            return [ns](const CallArgs& a) {
                Value d = ns ? Value::make_namespace() : Value::dict();
                for (const auto& p : a.positional) {
                    if (!p.is_dict())
                        throw TemplateRuntimeError(
                            "dict/namespace positional argument must be a mapping");
                    for (const auto& [k, v] : p.dict_data().entries) d.dict_data_mut().set(k, v);
                }
                for (const auto& [k, v] : a.keyword) d.dict_data_mut().set(Value(k), v);
                return d;
            };
        };
        globals_["namespace"] = Value::function("namespace", make_dict(true));
        globals_["dict"] = Value::function("dict", make_dict(false));
        globals_["raise_exception"] =
            Value::function("raise_exception", [](const CallArgs& a) -> Value {
                throw TemplateRaised(a.positional.empty() ? std::string() : a.positional[0].str());
            });
        const std::optional<std::time_t> now = opt_.now;
        globals_["strftime_now"] = Value::function("strftime_now", [now](const CallArgs& a) {
            const Value* fmt = arg(a, 0, "format");
            if (!fmt || !fmt->is_string())
                throw TemplateRuntimeError("strftime_now() needs a format string");
            const std::time_t t = now ? *now : std::time(nullptr);
            std::tm tm{};
            localtime_r(&t, &tm);
            char buf[512];
            const std::size_t n = std::strftime(buf, sizeof buf, fmt->as_string().c_str(), &tm);
            return Value(std::string(buf, n));
        });
    }

    // --- statements ---
    Flow exec(const Body& body, const ScopePtr& scope, std::string& out) {
        for (const auto& s : body) {
            step();
            const Flow f = at(s->offset, [&] { return exec_one(*s, scope, out); });
            if (f != Flow::Normal) return f;
        }
        return Flow::Normal;
    }

    Flow exec_one(const Stmt& s, const ScopePtr& scope, std::string& out) {
        switch (s.kind) {
            case StmtKind::Text:
                emit(out, s.text);
                return Flow::Normal;
            case StmtKind::Output:
                emit(out, eval(*s.expr, scope).str());
                return Flow::Normal;
            case StmtKind::If:
                for (const auto& [test, body] : s.branches)
                    if (!test || eval(*test, scope).truthy()) return exec(body, scope, out);
                return Flow::Normal;
            case StmtKind::For:
                return exec_for(s, scope, out);
            case StmtKind::Set:
                assign(s, eval(*s.expr, scope), scope);
                return Flow::Normal;
            case StmtKind::SetBlock: {
                std::string text;
                exec(s.body, scope, text);
                Value v(std::move(text));
                if (s.filter) v = apply_filters(*s.filter, std::move(v), scope);
                scope->vars[s.targets[0]] = std::move(v);
                return Flow::Normal;
            }
            case StmtKind::FilterBlock: {
                std::string text;
                exec(s.body, scope, text);
                emit(out, apply_filters(*s.filter, Value(std::move(text)), scope).str());
                return Flow::Normal;
            }
            case StmtKind::Macro:
                scope->vars[s.name] = make_macro(s, scope);
                return Flow::Normal;
            case StmtKind::Break:
                return Flow::Break;
            case StmtKind::Continue:
                return Flow::Continue;
        }
        return Flow::Normal;
    }

    void bind(Scope& scope, const Stmt& s, const Value& v) {
        if (!s.unpack) {
            scope.vars[s.targets[0]] = v;
            return;
        }
        const auto parts = iterate(v);
        if (parts.size() != s.targets.size())
            throw TemplateRuntimeError(parts.size() > s.targets.size()
                                           ? "too many values to unpack"
                                           : "not enough values to unpack");
        for (std::size_t i = 0; i < parts.size(); ++i) scope.vars[s.targets[i]] = parts[i];
    }

    void assign(const Stmt& s, const Value& v, const ScopePtr& scope) {
        if (!s.attr_target) {
            bind(*scope, s, v);
            return;
        }
        Value ns = lookup(scope, s.targets[0]);
        if (!ns.is_namespace())
            throw TemplateRuntimeError("cannot assign attribute on non-namespace object");
        ns.dict_data_mut().set(Value(s.targets[1]), v);
    }

    Flow exec_for(const Stmt& s, const ScopePtr& scope, std::string& out) {
        auto inner = std::make_shared<Scope>();
        inner->parent = scope;
        std::vector<Value> items = iterate(eval(*s.expr, scope));
        if (s.filter) {  // `for x in xs if cond`: loop.* counts only the items that pass
            std::vector<Value> kept;
            for (const auto& item : items) {
                step();
                bind(*inner, s, item);
                if (eval(*s.filter, inner).truthy()) kept.push_back(item);
            }
            items = std::move(kept);
        }
        const auto n = static_cast<std::int64_t>(items.size());
        for (std::int64_t i = 0; i < n; ++i) {
            step();
            Value loop = Value::dict();
            auto& d = loop.dict_data_mut();
            d.set(Value("index"), Value(i + 1));
            d.set(Value("index0"), Value(i));
            d.set(Value("revindex"), Value(n - i));
            d.set(Value("revindex0"), Value(n - i - 1));
            d.set(Value("first"), Value(i == 0));
            d.set(Value("last"), Value(i == n - 1));
            d.set(Value("length"), Value(n));
            d.set(Value("depth"), Value(1));
            d.set(Value("depth0"), Value(0));
            if (i > 0) d.set(Value("previtem"), items[static_cast<std::size_t>(i - 1)]);
            if (i + 1 < n) d.set(Value("nextitem"), items[static_cast<std::size_t>(i + 1)]);
            inner->vars["loop"] = loop;
            bind(*inner, s, items[static_cast<std::size_t>(i)]);
            if (exec(s.body, inner, out) == Flow::Break) break;
        }
        if (n == 0) exec(s.else_body, scope, out);
        return Flow::Normal;
    }

    Value make_macro(const Stmt& s, const ScopePtr& scope) {
        // The macro sees its defining scope while that scope lives; a weak pointer keeps a macro
        // stored in a namespace from holding its scope (and itself) alive in a cycle.
        std::weak_ptr<Scope> defining = scope;
        const Stmt* m = &s;
        return Value::function(
            s.name, [this, m, defining](const CallArgs& a) { return call_macro(*m, defining, a); });
    }

    Value call_macro(const Stmt& m, const std::weak_ptr<Scope>& defining, const CallArgs& a) {
        if (++call_depth_ > opt_.max_call_depth) {
            --call_depth_;
            throw TemplateRuntimeError("macro calls nested more than " +
                                       std::to_string(opt_.max_call_depth) + " deep");
        }
        struct Depth {
            int& d;
            ~Depth() { --d; }
        } depth{call_depth_};
        auto scope = std::make_shared<Scope>();
        scope->parent = defining.lock();
        if (!scope->parent) scope->parent = root_.lock();
        if (a.positional.size() > m.params.size())
            throw TemplateRuntimeError("macro '" + m.name + "' takes not more than " +
                                       std::to_string(m.params.size()) + " argument(s)");
        Value kwargs = Value::dict();
        for (const auto& [k, v] : a.keyword) {
            bool known = false;
            for (const auto& p : m.params) known = known || p.first == k;
            if (!known) kwargs.dict_data_mut().set(Value(k), v);
        }
        for (std::size_t i = 0; i < m.params.size(); ++i) {
            const auto& [name, dflt] = m.params[i];
            const Value* given = arg(a, i, name);
            if (given)
                scope->vars[name] = *given;
            else if (dflt)
                scope->vars[name] = eval(*dflt, scope);
            else
                scope->vars[name] = Value::undefined("parameter '" + name + "' was not provided");
        }
        if (!kwargs.dict_data().entries.empty())
            throw TemplateRuntimeError("macro '" + m.name + "' takes no keyword argument '" +
                                       kwargs.dict_data().entries[0].first.str() + "'");
        std::string out;
        exec(m.body, scope, out);
        return Value(std::move(out));
    }

    static std::int64_t work_of(const Value& v) {
        if (v.is_string()) return 1 + static_cast<std::int64_t>(v.as_string().size() / 64);
        if (v.is_list()) return 1 + static_cast<std::int64_t>(v.items().size());
        if (v.is_dict() || v.is_namespace())
            return 1 + static_cast<std::int64_t>(v.dict_data().entries.size());
        return 1;
    }

    Value charged(Value v) {
        step(work_of(v));
        return v;
    }

    // --- expressions ---
    Value eval(const Expr& e, const ScopePtr& scope) {
        return at(e.offset, [&] { return eval_node(e, scope); });
    }

    CallArgs eval_args(const Expr& e, const ScopePtr& scope) {
        CallArgs a;
        for (const auto& x : e.args) a.positional.push_back(eval(*x, scope));
        for (const auto& [k, x] : e.kwargs) a.keyword.emplace_back(k, eval(*x, scope));
        return a;
    }

    Value apply_filters(const Expr& f, Value innermost, const ScopePtr& scope) {
        Value operand =
            f.target ? apply_filters(*f.target, std::move(innermost), scope) : std::move(innermost);
        return apply_filter(f.name, operand, eval_args(f, scope));
    }

    Value eval_node(const Expr& e, const ScopePtr& scope) {
        switch (e.kind) {
            case ExprKind::Literal:
                return e.literal;
            case ExprKind::Name:
                return lookup(scope, e.name);
            case ExprKind::ListLit:
            case ExprKind::TupleLit: {
                std::vector<Value> items;
                for (const auto& x : e.args) items.push_back(eval(*x, scope));
                return Value::list(std::move(items), e.kind == ExprKind::TupleLit);
            }
            case ExprKind::DictLit: {
                Value d = Value::dict();
                for (std::size_t i = 0; i + 1 < e.args.size(); i += 2) {
                    Value key = eval(*e.args[i], scope);
                    check_hashable(key);
                    d.dict_data_mut().set(std::move(key), eval(*e.args[i + 1], scope));
                }
                return d;
            }
            case ExprKind::GetAttr:
                return get_attr(charged(eval(*e.target, scope)), e.name);
            case ExprKind::GetItem:
                return get_item(charged(eval(*e.target, scope)), eval(*e.args[0], scope));
            case ExprKind::Slice: {
                const Value obj = charged(eval(*e.target, scope));
                Value b[3];
                const Value* p[3] = {nullptr, nullptr, nullptr};
                for (int i = 0; i < 3; ++i)
                    if (e.args[static_cast<std::size_t>(i)]) {
                        b[i] = eval(*e.args[static_cast<std::size_t>(i)], scope);
                        p[i] = &b[i];
                    }
                return get_slice(obj, p[0], p[1], p[2]);
            }
            case ExprKind::Call: {
                const Value fn = eval(*e.target, scope);
                CallArgs a = eval_args(e, scope);
                if (!fn.is_callable()) {
                    if (fn.is_undefined())
                        throw TemplateRuntimeError(
                            fn.name().empty() ? "undefined value is not callable" : fn.name());
                    throw TemplateRuntimeError("'" + fn.type_name() + "' object is not callable");
                }
                return charged(fn.function()(a));
            }
            case ExprKind::Filter:
                return charged(
                    apply_filter(e.name, charged(eval(*e.target, scope)), eval_args(e, scope)));
            case ExprKind::Test: {
                const bool r = apply_test(e.name, eval(*e.target, scope), eval_args(e, scope));
                return Value(e.negated ? !r : r);
            }
            case ExprKind::Unary: {
                const Value v = eval(*e.target, scope);
                if (e.name == "not") return Value(!v.truthy());
                if (v.is_undefined())
                    throw TemplateRuntimeError(v.name().empty() ? "undefined value used"
                                                                : v.name());
                if (!v.is_number())
                    throw TemplateRuntimeError("bad operand type for unary " + e.name + ": '" +
                                               v.type_name() + "'");
                if (e.name == "+") return v.is_float() ? v : Value(v.as_int());
                return v.is_float() ? Value(-v.as_double()) : binary_op("-", Value(0), v);
            }
            case ExprKind::Binary: {
                const Value a = eval(*e.target, scope);
                if (e.name == "and") return a.truthy() ? eval(*e.args[0], scope) : a;
                if (e.name == "or") return a.truthy() ? a : eval(*e.args[0], scope);
                return charged(binary_op(e.name, charged(a), charged(eval(*e.args[0], scope))));
            }
            case ExprKind::Compare: {
                Value left = charged(eval(*e.target, scope));
                for (std::size_t i = 0; i < e.ops.size(); ++i) {
                    Value right = charged(eval(*e.args[i], scope));
                    if (!binary_op(e.ops[i], left, right).truthy()) return Value(false);
                    left = std::move(right);
                }
                return Value(true);
            }
            case ExprKind::CondExpr:
                if (eval(*e.target, scope).truthy()) return eval(*e.args[0], scope);
                return e.args[1] ? eval(*e.args[1], scope)
                                 : Value::undefined("conditional expression had no else");
        }
        return Value();
    }

    std::string_view src_;
    const Value& context_;
    const RenderOptions& opt_;
    std::map<std::string, Value, std::less<>> globals_;
    std::weak_ptr<Scope> root_;
    std::int64_t steps_ = 0;
    std::size_t emitted_ = 0;
    int call_depth_ = 0;
    bool positioned_ = false;
};

}  // namespace

std::string execute(std::string_view normalized_source, const Body& body, const Value& context,
                    const RenderOptions& options) {
    return Interpreter(normalized_source, context, options).run(body);
}

}  // namespace fluoro::jinja
