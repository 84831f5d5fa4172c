#!/usr/bin/env python3
"""Checks that every #include between the project's folders follows the allowed directions.

The rules are the ```layers block of docs/ARCHITECTURE.md (one source: the page a newcomer reads is
the table the check enforces). Each line there is

    MODULE: MODULE MODULE ...       the folders MODULE's files may include besides its own
    MODULE: only HEADER HEADER ...  the only headers of other layers MODULE's files may include

A module is a folder under engine/, app/ or ui/ (engine/backend/cpu is its own module, as is
engine/backend/cuda); a module missing from the table may include nothing of the others. The check
also refuses a table whose allowed directions contain a cycle.

Usage: check_layers.py [ROOT]      exit 0 when every include is allowed, 1 with one line per
                                   violation (file:line: what it includes, and why not) otherwise.
"""
from __future__ import annotations

import os
import re
import sys

LAYERS = ("engine", "app", "ui")
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)
SOURCE_EXT = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")


def parse_rules(markdown: str) -> dict[str, tuple[str, set[str]]]:
    """{module: ("modules" | "only", names)} from the ```layers block."""
    m = re.search(r"^```layers\n(.*?)^```", markdown, re.M | re.S)
    if not m:
        raise ValueError("docs/ARCHITECTURE.md has no ```layers block")
    rules: dict[str, tuple[str, set[str]]] = {}
    for n, line in enumerate(m.group(1).splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if ":" not in line:
            raise ValueError(f"layers block line {n}: expected 'MODULE: ...', got {line!r}")
        mod, rest = (s.strip() for s in line.split(":", 1))
        words = rest.split()
        if mod in rules:
            raise ValueError(f"layers block line {n}: {mod} is listed twice")
        if words and words[0] == "only":
            rules[mod] = ("only", set(words[1:]))
        else:
            rules[mod] = ("modules", set(words))
    return rules


def module_of(path: str, modules: set[str]) -> str | None:
    """The longest module that holds `path` (engine/backend/cpu before engine/backend)."""
    parts = path.split("/")
    for k in range(len(parts) - 1, 0, -1):
        cand = "/".join(parts[:k])
        if cand in modules:
            return cand
    if len(parts) >= 3 and parts[0] in LAYERS:
        return "/".join(parts[:2])  # a folder the table does not name: may include nothing
    return None


def resolve(include: str, including: str, files: set[str]) -> str | None:
    """The project file an include names: next to the includer, or under one layer's root."""
    here = os.path.normpath(os.path.join(os.path.dirname(including), include))
    if here in files:
        return here
    for layer in LAYERS:
        cand = f"{layer}/{include}"
        if cand in files:
            return cand
    return None


def find_cycle(rules: dict[str, tuple[str, set[str]]]) -> list[str] | None:
    graph: dict[str, set[str]] = {}
    for mod, (kind, names) in rules.items():
        if kind == "modules":
            graph[mod] = set(names)
        else:  # headers: the modules that hold them
            graph[mod] = {module_of(h, set(rules)) or h for h in names}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if state.get(d) is None:
                c = visit(d)
                if c:
                    return c
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if state.get(m) is None:
            c = visit(m)
            if c:
                return c
    return None


def check(sources: dict[str, str], rules: dict[str, tuple[str, set[str]]]) -> list[str]:
    """Violations, one line each, for `sources` ({path relative to the root: text})."""
    problems: list[str] = []
    cycle = find_cycle(rules)
    if cycle:
        problems.append("docs/ARCHITECTURE.md: the allowed directions have a cycle: "
                        + " -> ".join(cycle))
    for mod, (kind, names) in rules.items():
        for name in names:
            if kind == "modules" and name not in rules:
                problems.append(f"docs/ARCHITECTURE.md: {mod} may include {name}, "
                                "which is not a module of the table")
    modules = set(rules)
    files = set(sources)
    for path in sorted(sources):
        src_mod = module_of(path, modules)
        if src_mod is None:
            continue
        for m in INCLUDE.finditer(sources[path]):
            target = resolve(m.group(1), path, files)
            if target is None:
                continue  # a system or third-party header
            dst_mod = module_of(target, modules)
            if dst_mod is None or dst_mod == src_mod:
                continue
            line = sources[path].count("\n", 0, m.start()) + 1
            kind, names = rules.get(src_mod, ("modules", set()))
            inc = m.group(1)
            if kind == "modules" and dst_mod not in names:
                problems.append(f"{path}:{line}: includes {inc} ({dst_mod}); {src_mod} may "
                                f"include only {', '.join(sorted(names)) or 'nothing else'}")
            elif kind == "only" and target not in names and dst_mod not in names:
                problems.append(f"{path}:{line}: includes {inc}; {src_mod} may include only "
                                f"{', '.join(sorted(names))} from the other layers")
    return problems


def load_tree(root: str) -> dict[str, str]:
    sources: dict[str, str] = {}
    for layer in LAYERS:
        for dirpath, _, names in os.walk(os.path.join(root, layer)):
            for name in names:
                if name.endswith(SOURCE_EXT):
                    full = os.path.join(dirpath, name)
                    with open(full, encoding="utf-8", errors="replace") as f:
                        sources[os.path.relpath(full, root)] = f.read()
    return sources


def main(argv: list[str]) -> int:
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    with open(os.path.join(root, "docs", "ARCHITECTURE.md"), encoding="utf-8") as f:
        rules = parse_rules(f.read())
    problems = check(load_tree(root), rules)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) break the layers of docs/ARCHITECTURE.md")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
