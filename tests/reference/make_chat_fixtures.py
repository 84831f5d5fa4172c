#!/usr/bin/env python3
"""Generate tests/reference/fixtures/chat_templates.json: real chat templates rendered by jinja2.

For each template below and each conversation in CONVERSATIONS, with and without the generation
prompt, the fixture records the exact text jinja2 renders (or the error the template raises).
The C++ renderers (engine/chat/chat_render.*) must reproduce every entry exactly, after the BOS
rule documented in engine/chat/chat_render.h: a template that starts its output with
`bos_token` is rendered by us WITHOUT that text and reports `template_bos = true` instead, so the
test compares `(bos_token if template_bos else "") + text` with the jinja2 output.

Rendering follows Hugging Face transformers' apply_chat_template: an ImmutableSandboxedEnvironment
with trim_blocks=True, lstrip_blocks=True and the loopcontrols extension, `raise_exception` as a
global, and the tokenizer's special tokens (bos_token, eos_token) passed as variables.

Templates
---------
  smollm2 : tokenizer.chat_template read from models/SmolLM2-135M-Instruct.Q4_1.gguf (with the
            file's BOS/EOS strings and add_bos flag). Injects a default system prompt.
  chatml  : generic ChatML without a default system prompt (teknium/OpenHermes-2.5-Mistral-7B),
            quoted from llama.cpp tests/test-chat-template.cpp; uses `\\n` escapes, not newlines.
  gemma3  : tests/reference/templates/gemma3.jinja (Google's Gemma 3 template; the GGUF carries
            none, so the C++ side picks the renderer from general.architecture). BOS/EOS/add_bos
            from models/gemma-3-270m-q4_k_m.gguf.
  llama3  : tests/reference/templates/llama3.jinja (Meta-Llama-3-8B-Instruct).
Sources: tests/reference/templates/README.md.

Usage: python3 tests/reference/make_chat_fixtures.py   (from the repository root; needs the
`gguf` and `jinja2` packages and the two default models in models/).
"""

import json
import os
import sys

import jinja2
import jinja2.ext
import jinja2.sandbox

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.environ.get("FLUORO_MODELS_DIR", os.path.join(ROOT, "models"))
TEMPLATES = os.path.join(ROOT, "tests", "reference", "templates")
OUT = os.path.join(ROOT, "tests", "reference", "fixtures", "chat_templates.json")

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA3_FILE = "gemma-3-270m-q4_k_m.gguf"

CHATML_OPENHERMES = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content']"
    " + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}")


def s(text):
    return {"role": "system", "content": text}


def u(text):
    return {"role": "user", "content": text}


def a(text):
    return {"role": "assistant", "content": text}


# Every conversation alternates user/assistant after an optional leading system message, except
# the last four, which Gemma's template rejects (and the other templates render as given).
CONVERSATIONS = [
    ("empty", []),
    ("single_user", [u("Hi")]),
    ("system_user", [s("You are terse."), u("Hi")]),
    ("multi_turn", [u("What is 2+2?"), a("4."), u("And 3+3?")]),
    ("system_multi_turn", [s("Answer in French."), u("Hello"), a("Bonjour !"), u("How are you?")]),
    ("ends_with_assistant", [u("Hi"), a("Hello! How can I help?")]),
    ("whitespace", [s("  \n Be brief. \n"), u("\n\n  Hello there  \n"), a(" \tHi!\t \n"),
                    u("  ")]),
    # Python's str.strip() (jinja's trim) removes Unicode whitespace (NBSP, ideographic space,
    # em space, line/paragraph separators, NEL, \x1c-\x1f) but not ZERO WIDTH SPACE or a BOM.
    ("unicode_whitespace", [u("\u00a0\u3000Gr\u00fc\u00dfe \U0001F30D\u2003\u2028"),
                            a("\u0085\u200b kept zero-width \u200b\x1c"),
                            u("\ufeffBOM first\u202f\u2029")]),
    ("internal_newlines", [u("line 1\nline 2\n\nline 4"), a("a\r\nb\r\n")]),
    ("empty_content", [u(""), a(""), u("x")]),
    ("template_text_in_content", [u("{{ bos_token }} <|im_end|> <start_of_turn>user\n{% raw %}")]),
    ("system_only", [s("Only a system prompt.")]),
    ("two_users", [u("a"), u("b")]),
    ("starts_with_assistant", [a("I speak first.")]),
    ("system_then_assistant", [s("sys"), a("hi")]),
    ("user_assistant_assistant", [u("a"), a("b"), a("c")]),
]


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def environment():
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.globals["raise_exception"] = raise_exception
    return env


def gguf_facts(path):
    """(chat template or "", bos string, eos string, add_bos) of a GGUF file."""
    import gguf
    r = gguf.GGUFReader(path)

    def field(name, default=None):
        f = r.fields.get(name)
        return f.contents() if f is not None else default

    tokens = field("tokenizer.ggml.tokens")
    return (field("tokenizer.chat_template", ""), tokens[field("tokenizer.ggml.bos_token_id")],
            tokens[field("tokenizer.ggml.eos_token_id")],
            bool(field("tokenizer.ggml.add_bos_token", False)))


def read_template(name):
    with open(os.path.join(TEMPLATES, name), encoding="utf-8", newline="") as f:
        return f.read()


def templates():
    smol_tmpl, smol_bos, smol_eos, smol_add_bos = gguf_facts(os.path.join(MODELS, SMOLLM2_FILE))
    gemma_tmpl, gemma_bos, gemma_eos, gemma_add_bos = gguf_facts(os.path.join(MODELS, GEMMA3_FILE))
    assert smol_tmpl, "SmolLM2's GGUF should carry its chat template"
    assert not gemma_tmpl, "the Gemma 3 270M GGUF was expected to carry no chat template"
    return [
        dict(name="smollm2", arch="llama", template=smol_tmpl, template_in_gguf=True,
             bos_token=smol_bos, eos_token=smol_eos, add_bos=smol_add_bos,
             source=f"tokenizer.chat_template of models/{SMOLLM2_FILE}"),
        dict(name="chatml", arch="llama", template=CHATML_OPENHERMES, template_in_gguf=True,
             bos_token="<s>", eos_token="<|im_end|>", add_bos=True,
             source="teknium/OpenHermes-2.5-Mistral-7B, as quoted in llama.cpp "
                    "tests/test-chat-template.cpp"),
        dict(name="gemma3", arch="gemma3", template=read_template("gemma3.jinja"),
             template_in_gguf=False, bos_token=gemma_bos, eos_token=gemma_eos,
             add_bos=gemma_add_bos,
             source="tests/reference/templates/gemma3.jinja: chat_template of google/gemma-3-*-it "
                    f"tokenizer_config.json; BOS/EOS/add_bos from models/{GEMMA3_FILE}"),
        dict(name="llama3", arch="llama", template=read_template("llama3.jinja"),
             template_in_gguf=True, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>",
             add_bos=True,
             source="tests/reference/templates/llama3.jinja: chat_template of "
                    "meta-llama/Meta-Llama-3-8B-Instruct tokenizer_config.json"),
    ]


def main():
    env = environment()
    tmpls = templates()
    cases = []
    for t in tmpls:
        compiled = env.from_string(t["template"])
        for conv_name, messages in CONVERSATIONS:
            for gen in (False, True):
                case = dict(template=t["name"], conversation=conv_name, add_generation_prompt=gen)
                try:
                    case["text"] = compiled.render(messages=messages, add_generation_prompt=gen,
                                                   bos_token=t["bos_token"],
                                                   eos_token=t["eos_token"])
                except jinja2.exceptions.TemplateError as e:
                    case["error"] = f"{type(e).__name__}: {e}"
                cases.append(case)
    fixture = {
        "generator": "tests/reference/make_chat_fixtures.py",
        "jinja2_version": jinja2.__version__,
        "python_version": sys.version.split()[0],
        "rendering": "jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, "
                     "lstrip_blocks=True, extensions=[loopcontrols]) + raise_exception, as "
                     "transformers' apply_chat_template",
        "templates": tmpls,
        "conversations": [{"name": n, "messages": m} for n, m in CONVERSATIONS],
        "cases": cases,
    }
    with open(OUT, "w", encoding="utf-8", newline="\n") as f:
        json.dump(fixture, f, indent=1, ensure_ascii=False)
        f.write("\n")
    errors = sum("error" in c for c in cases)
    print(f"wrote {OUT}: {len(cases)} cases ({errors} template errors), jinja2 {jinja2.__version__}")


if __name__ == "__main__":
    main()
