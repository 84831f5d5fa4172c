#!/usr/bin/env python3
"""Renders real chat templates with Python's jinja2 (configured as transformers does) and with
fluoro_jinja_render, and requires the same text, or an error from both.

Usage: jinja_compare.py FLUORO_JINJA_RENDER REPO_ROOT [--templates DIR] [--markdown] [-v]

The templates are the ~70 in llama.cpp's models/templates, taken from the llama-cpp-python sdist
that scripts/fetch-llama-cpp-source.sh downloads (sha256-pinned, cached under models/). Without
--templates the script runs that fetch; when it fails (offline) it exits 77 (skipped) unless
FLUORO_REQUIRE_MODELS=1. Each template is one row: identical (every conversation jinja2 renders
we render identically; where jinja2 raises we raise), differs (the first conversation and byte
offset where we do not), refused by us (a Jinja2 feature we do not implement: the reason), or
refused by jinja2 (it raises for every conversation). Exit 1 when any template differs.
"""
import datetime
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77
# strftime_now() in both renderers formats this instant (2025-07-26 12:00:00 UTC), with TZ=UTC.
FIXED_NOW = 1753531200
SPECIAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}


def skip_or_fail(why):
    print(why, file=sys.stderr)
    sys.exit(1 if os.environ.get("FLUORO_REQUIRE_MODELS") == "1" else SKIP)


def make_environment():
    """transformers' _compile_jinja_template: the environment, tojson, raise_exception,
    strftime_now and the {% generation %} extension (rendered as its body)."""
    import jinja2
    from jinja2 import nodes
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Generation(Extension):
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

        def _render(self, caller):
            return caller()

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.fromtimestamp(FIXED_NOW).strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def contexts(conversations):
    for name, conv in conversations.items():
        if name.startswith("_"):
            continue
        # transformers passes tools and documents always (None when absent), then the special tokens.
        ctx = {"tools": None, "documents": None}
        ctx.update(conv)
        ctx.update(SPECIAL_TOKENS)
        yield name, ctx


def render_jinja2(env, source, ctx):
    try:
        return True, env.from_string(source).render(**ctx)
    except Exception as e:  # any failure counts as "jinja2 raised"
        import jinja2
        if type(e) is jinja2.exceptions.TemplateError:  # raise_exception(msg): the text must match
            return False, ("raise_exception", str(e))
        return False, f"{type(e).__name__}: {e}"


def render_ours(tool, template_path, ctx, workdir):
    ctx_path = os.path.join(workdir, "ctx.json")
    with open(ctx_path, "w", encoding="utf-8") as f:
        json.dump(ctx, f, ensure_ascii=False)
    p = subprocess.run([tool, template_path, ctx_path, "--now", str(FIXED_NOW)], capture_output=True,
                       timeout=60, env=dict(os.environ, TZ="UTC"))
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace").strip()


def first_diff(a, b):
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def compare_template(env, tool, path, convs, workdir, verbose):
    with open(path, encoding="utf-8") as f:
        source = f.read()
    rendered = total = 0
    for name, ctx in contexts(convs):
        ok, want = render_jinja2(env, source, ctx)
        total += 1
        rendered += ok
        rc, got, err = render_ours(tool, path, ctx, workdir)
        if rc == 3:
            return "refused by us", err.removeprefix("unsupported: ")
        if rc not in (0, 1):
            return "differs", f"{name}: fluoro_jinja_render exit {rc}: {err}"
        if ok and rc != 0:
            return "differs", f"{name}: jinja2 renders, we raise: {err}"
        if not ok and rc == 0:
            return "differs", f"{name}: jinja2 raises ({want}), we render"
        if not ok and isinstance(want, tuple) and err != f"error: {want[1]}":
            return "differs", f"{name}: raise_exception({want[1]!r}) in jinja2, we: {err}"
        if ok and got != want:
            i = first_diff(got, want)
            detail = f"{name}: first difference at char {i}: ours {got[i:i + 40]!r} vs jinja2 {want[i:i + 40]!r}"
            if verbose:
                detail += f"\n--- ours ---\n{got}\n--- jinja2 ---\n{want}"
            return "differs", detail
    if not rendered:
        return "refused by jinja2", "jinja2 raises for every conversation (and so do we)"
    both_raise = f"; jinja2 and we raise for the other {total - rendered}" if rendered < total else ""
    return "identical", f"{rendered} of {total} rendered{both_raise}"


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("-")]
    flags = [a for a in argv[1:] if a.startswith("-")]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    tool, root = args[0], args[1]
    templates = None
    if "--templates" in argv:
        templates = argv[argv.index("--templates") + 1]
        args.remove(templates)
    try:
        import jinja2  # noqa: F401
    except ImportError:
        skip_or_fail("jinja2 is not installed (apt-get install python3-jinja2)")
    if templates is None:
        p = subprocess.run([os.path.join(root, "scripts", "fetch-llama-cpp-source.sh"), "--print-templates"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            skip_or_fail("could not fetch the llama-cpp-python sdist:\n" + p.stderr)
        templates = p.stdout.strip()
    with open(os.path.join(root, "tests", "reference", "jinja_conversations.json"), encoding="utf-8") as f:
        convs = json.load(f)
    env = make_environment()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in sorted(os.listdir(templates)):
            if name.endswith(".jinja"):
                status, detail = compare_template(env, tool, os.path.join(templates, name), convs, work,
                                                  "-v" in flags)
                rows.append((name, status, detail))
    counts = {}
    for _, status, _ in rows:
        counts[status] = counts.get(status, 0) + 1
    if "--markdown" in flags:
        print("| Template | Result | Detail |\n|---|---|---|")
        for name, status, detail in rows:
            cell = detail.replace("|", "\\|").replace("\n", " ")
            print(f"| {name} | {status} | {cell} |")
    else:
        for name, status, detail in rows:
            print(f"{status:18} {name}" + (f"  {detail}" if detail else ""))
    print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + f" (of {len(rows)} templates, "
          f"{sum(1 for k in convs if not k.startswith('_'))} conversations each)")
    return 1 if counts.get("differs") else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
