#!/usr/bin/env python3
"""Differential test of the Jinja interpreter: random small templates (expressions, filters, tests,
methods, loops, ifs, sets over a fixed context) rendered by Python's jinja2, set up as transformers
does (jinja_compare.make_environment), and by fluoro_jinja_render.

Usage: jinja_differential.py FLUORO_JINJA_RENDER [--seed N] [--count N]

Per template: both render the same text, or both raise, or we refuse it (UnsupportedError: a
feature we do not implement, e.g. printing a generator, whose text holds an address). Anything
else (different text, only one side raising, a crash) is printed and makes the exit status 1.
Exit 77 (skipped) when jinja2 is not installed, unless FLUORO_REQUIRE_MODELS=1.
"""
import copy
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

CONTEXT = {
    "s": "Hello World", "n": 7, "f": 2.5, "l": [3, 1, 2], "d": {"b": 1, "a": "x"}, "e": "", "z": None,
    "t": True,
    "msgs": [{"role": "user", "content": " hi "},
             {"role": "assistant", "content": "yo", "tool_calls": [{"name": "f", "arguments": {"a": 1}}]}],
}
ATOMS = ["s", "n", "f", "l", "d", "e", "z", "t", "msgs", "missing", "1", "0", "-3", "2.0", "'ab'", "\"c d\"",
         "[1, 'a']", "{'k': 1}", "none", "true", "false", "(1, 2)", "msgs[0]", "msgs[1].tool_calls", "d.a",
         "d['b']", "l[1:]", "s[::-1]", "msgs|length"]
FILTERS = ["length", "trim", "upper", "lower", "title", "capitalize", "string", "list", "first", "last", "reverse",
           "sort", "unique", "tojson", "join(',')", "default('D')", "default('D', true)", "int", "float", "abs",
           "items", "dictsort", "replace('l', 'L')", "indent(2)", "wordcount", "safe", "e", "min", "max", "sum",
           "map('string')", "select", "reject", "selectattr('role')", "map(attribute='role')", "count", "round",
           "center(9)", "batch(2)", "tojson(indent=2)"]
TESTS = ["defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "iterable",
         "sequence", "boolean", "true", "false", "odd", "even", "divisibleby(3)", "eq 1", "in [1, 'ab']", "lower",
         "upper", "callable"]
OPERATORS = ["+", "-", "*", "/", "//", "%", "~", "==", "!=", "<", ">", "<=", ">=", "in", "not in", "and", "or",
             "**"]
METHODS = ["strip()", "split()", "split(' ')", "upper()", "startswith('H')", "endswith('d')", "replace('o', '0')",
           "title()", "find('o')", "lstrip('H')", "rstrip('d')", "get('a')", "items()", "keys()", "values()",
           "get('zz', 5)", "format(1)", "count('l')", "rsplit(' ', 1)", "splitlines()", "isdigit()"]


def expression(rng, depth=0):
    r = rng.random()
    if depth > 2 or r < 0.3:
        return rng.choice(ATOMS)
    if r < 0.5:
        return f"{expression(rng, depth + 1)}|{rng.choice(FILTERS)}"
    if r < 0.6:  # parenthesized: `x is test not in y` parses oddly in jinja2 (test argument)
        return f"({expression(rng, depth + 1)} is {rng.choice(['', 'not '])}{rng.choice(TESTS)})"
    if r < 0.8:
        return f"({expression(rng, depth + 1)} {rng.choice(OPERATORS)} {expression(rng, depth + 1)})"
    if r < 0.9:
        return f"{rng.choice(['s', 'd', 'e', 'msgs[0].content', 'd.a'])}.{rng.choice(METHODS)}"
    return f"({expression(rng, depth + 1)} if {expression(rng, depth + 1)} else {expression(rng, depth + 1)})"


def statement(rng):
    r = rng.random()
    if r < 0.5:
        return "{{ " + expression(rng) + " }}"
    if r < 0.7:
        return "{% for x in " + expression(rng) + " %}[{{ x }}{{ loop.index }}]{% else %}E{% endfor %}"
    if r < 0.85:
        return "{% if " + expression(rng) + " %}Y{% else %}N{% endif %}"
    return "{% set v = " + expression(rng) + " %}{{ v }}"


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    tool = argv[1]
    seed = int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 1
    count = int(argv[argv.index("--count") + 1]) if "--count" in argv else 1000
    try:
        import jinja_compare
        env = jinja_compare.make_environment()
    except ImportError:
        print("jinja2 is not installed (apt-get install python3-jinja2)", file=sys.stderr)
        return 1 if os.environ.get("FLUORO_REQUIRE_MODELS") == "1" else 77
    rng = random.Random(seed)
    counts = {"identical": 0, "both raise": 0, "refused by us": 0, "bad": 0}
    with tempfile.TemporaryDirectory() as work:
        ctx_path = os.path.join(work, "ctx.json")
        with open(ctx_path, "w") as f:
            json.dump(CONTEXT, f)
        tpl_path = os.path.join(work, "t.jinja")
        for _ in range(count):
            template = "|".join(statement(rng) for _ in range(rng.randint(1, 3)))
            with open(tpl_path, "w") as f:
                f.write(template)
            # A fresh copy each time: jinja2's indent filter appends to a list it is given.
            ok, want = jinja_compare.render_jinja2(env, template, copy.deepcopy(CONTEXT))
            p = subprocess.run([tool, tpl_path, ctx_path, "--now", "0"], capture_output=True, timeout=60)
            got = p.stdout.decode("utf-8", "replace")
            err = p.stderr.decode("utf-8", "replace").strip()
            if p.returncode == 3:
                counts["refused by us"] += 1
            elif ok and p.returncode == 0 and got == want:
                counts["identical"] += 1
            elif not ok and p.returncode == 1:
                counts["both raise"] += 1
            else:
                counts["bad"] += 1
                print(f"DIFF {template!r}\n  jinja2: {want!r}\n  ours (exit {p.returncode}): {got!r} {err}")
    print(", ".join(f"{v} {k}" for k, v in counts.items()) + f" (seed {seed}, {count} templates)")
    return 1 if counts["bad"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
