#!/usr/bin/env python3
"""scripts/check_layers.py: the real tree passes, and each kind of broken direction fails.

Usage: check_layers_test.py REPO_ROOT
"""
import os
import sys

root = sys.argv[1]
sys.path.insert(0, os.path.join(root, "scripts"))
import check_layers as cl  # noqa: E402

RULES = cl.parse_rules("""
```layers
engine/core:
engine/kv: engine/core
engine/runtime: engine/core engine/kv
ui/panels: only engine/runtime/engine_commands.h
```
""")
TREE = {
    "engine/core/error.h": "#pragma once\n",
    "engine/kv/kv_cache.h": '#pragma once\n#include "core/error.h"\n#include <vector>\n',
    "engine/runtime/engine_commands.h": '#include "kv/kv_cache.h"\n',
    "ui/panels/panel.cpp": '#include "runtime/engine_commands.h"\n',
}
failures = []


def expect(name, problems, want):
    if bool(problems) != want or (want and not all(isinstance(p, str) for p in problems)):
        failures.append(f"{name}: expected {'violations' if want else 'none'}, got {problems}")


expect("a tree that follows the rules", cl.check(TREE, RULES), False)
# kv reaching up into runtime: the include the check exists for.
upward = dict(TREE)
upward["engine/kv/kv_cache.cpp"] = '#include "kv/kv_cache.h"\n\n#include "runtime/engine_commands.h"\n'
p = cl.check(upward, RULES)
expect("kv including runtime", p, True)
if p and not p[0].startswith("engine/kv/kv_cache.cpp:3:"):
    failures.append(f"the violation names the wrong place: {p[0]}")
# The UI including an engine internal beside the allowed vocabulary header.
ui = dict(TREE)
ui["ui/panels/kv.h"] = '#include "kv/kv_cache.h"\n'
expect("ui including kv/", cl.check(ui, RULES), True)
# A folder the table does not name may include no other module.
unnamed = dict(TREE)
unnamed["engine/newthing/x.cpp"] = '#include "core/error.h"\n'
expect("an unnamed folder", cl.check(unnamed, RULES), True)
# A table that allows a cycle is refused even when no include uses it.
cyclic = cl.parse_rules("```layers\nengine/a: engine/b\nengine/b: engine/a\n```\n")
expect("a cyclic table", cl.check({}, cyclic), True)
# The project itself.
real = cl.check(cl.load_tree(root), cl.parse_rules(open(os.path.join(root, "docs/ARCHITECTURE.md")).read()))
expect("the repository", real, False)

for f in failures:
    print("FAIL:", f)
print(f"{6 - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
