// The parsed form of a template: expressions and statements. One generic node per category keeps
// the parser and interpreter short; each kind documents which fields it uses.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja/jinja_value.h"

namespace fluoro::jinja {

enum class ExprKind {
    Literal,   // literal
    Name,      // name
    ListLit,   // args: elements
    TupleLit,  // args: elements
    DictLit,   // args: key, value, key, value, ...
    GetAttr,   // target.name
    GetItem,   // target[args[0]]
    Slice,     // target[args[0]:args[1]:args[2]], each may be null
    Call,      // target(args..., kwargs...)
    Filter,    // target|name(args..., kwargs...); target is null inside {% filter %}
    Test,      // target is [not] name(args...); negated
    Unary,     // name ("-", "+", "not") applied to target
    Binary,    // target name args[0], name one of + - * / // % ** ~ and or
    Compare,   // target ops[0] args[0] ops[1] args[1] ... (chained like Python)
    CondExpr,  // args[0] if target else args[1] (args[1] null: undefined)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    ExprKind kind;
    std::size_t offset;  // into the normalized source
    Value literal;
    std::string name;
    ExprPtr target;
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
    std::vector<std::string> ops;
    bool negated = false;
};

enum class StmtKind {
    Text,      // text
    Output,    // {{ expr }}
    If,        // branches: (test, body)...; a null test is the else branch
    For,       // for targets in expr [if filter]: body [else: else_body]
    Set,       // set targets = expr, or set targets[0].targets[1] = expr when attr_target
    SetBlock,  // set targets[0] [| filter] %}body{% endset
    Macro,     // macro name(params) body
    Break,
    Continue,
    FilterBlock,  // filter (chain in `filter`, innermost target null) body
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
    StmtKind kind;
    std::size_t offset;
    std::string text;
    ExprPtr expr;
    ExprPtr filter;
    std::vector<std::pair<ExprPtr, Body>> branches;
    std::vector<std::string> targets;
    bool unpack = false;       // several targets (a, b = ...)
    bool attr_target = false;  // set ns.attr = ...
    Body body;
    Body else_body;
    std::string name;
    std::vector<std::pair<std::string, ExprPtr>> params;  // macro parameters, default may be null
};

}  // namespace fluoro::jinja
