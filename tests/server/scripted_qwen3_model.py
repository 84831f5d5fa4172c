#!/usr/bin/env python3
"""Writes a qwen3 GGUF that answers with fixed scripts: Qwen 3's vocabulary (llama.cpp's
ggml-vocab-qwen2.gguf with Qwen 3's added tokens - <think>, </think>, <tool_call>, ... - at their
Qwen 3 ids) and Qwen 3 0.6B's own chat template (models/templates/Qwen-Qwen3-0.6B.jinja), both from
the pinned llama-cpp-python sdist (scripts/fetch-llama-cpp-source.sh unpacks them under models/).
No small reasoning or tool-calling model can be fetched (none is on PyPI); this one makes the real
paths run - the file's template, the engine's reasoning split, the server's tool calls - with
output that is fixed by design and measures nothing.

  reasoning: every reply is <think>The user says hello; ...</think>Hello there! How can I help?
  tools:     a reply is the tool call <tool_call>{"name": "get_weather","arguments":{"city":
             "Paris"}}</tool_call>, unless the conversation already holds a tool result
             (</tool_response>): then "It is sunny in Paris, 18 degrees."

How: one layer. Token k of a script has the one-hot embedding e_(k+1), </tool_response> its own
dimension, every other token e_0, and the feed-forward part is zero. The LM head maps a script
token's dimension to the next token of its script (a bigram table; the scripts' tokens are all
distinct, a bigram cannot count) and e_0 to a script's first token. In the tools model one
attention head finds a </tool_response>: its query is constant, only that token has a key (on a
rotary pair that turns by under 0.002 rad over 1000 positions at base 1e6, so position does not
matter), and its value, written by the output projection into a flag dimension, tips e_0 from the
tool call's first token to the answer's (score 32 against 0: weight 1 - 1e-11 per key).

The script's token ids were taken once from llama.cpp's tokenizer on this vocabulary
(llama_cpp.Llama(vocab_only=True).tokenize, llama-cpp-python 0.3.36); the tests that use the model
check the texts, so a wrong id fails them.
Usage: scripted_qwen3_model.py reasoning|tools OUT.gguf [MODELS_DIR]
"""
import os
import sys

import numpy as np
import gguf

N_EMBD = 64
IM_END, ENDOFTEXT = 151645, 151643
THINK, THINK_END, TOOL_CALL, TOOL_CALL_END, TOOL_RESPONSE_END = 151667, 151668, 151657, 151658, 151666
QWEN3_ADDED = {  # Qwen 3's added tokens beyond Qwen 2's <|endoftext|>, <|im_start|>, <|im_end|>
    151646: "<|object_ref_start|>", 151647: "<|object_ref_end|>", 151648: "<|box_start|>",
    151649: "<|box_end|>", 151650: "<|quad_start|>", 151651: "<|quad_end|>",
    151652: "<|vision_start|>", 151653: "<|vision_end|>", 151654: "<|vision_pad|>",
    151655: "<|image_pad|>", 151656: "<|video_pad|>", 151657: "<tool_call>", 151658: "</tool_call>",
    151659: "<|fim_prefix|>", 151660: "<|fim_middle|>", 151661: "<|fim_suffix|>",
    151662: "<|fim_pad|>", 151663: "<|repo_name|>", 151664: "<|file_sep|>",
    151665: "<tool_response>", 151666: "</tool_response>", 151667: "<think>", 151668: "</think>",
}
# "<think>The user says hello; a short greeting back is enough.</think>Hello there! How can I help?"
REASONING = [THINK, 785, 1196, 2727, 23811, 26, 264, 2805, 42113, 1182, 374, 3322, 13, THINK_END,
             9707, 1052, 0, 2585, 646, 358, 1492, 30]
# '<tool_call>{"name": "get_weather","arguments":{"city":"Paris"}}</tool_call>'
TOOL_CALL_SCRIPT = [TOOL_CALL, 4913, 606, 788, 330, 455, 69364, 2198, 16370, 22317, 8926, 3252,
                    59604, 30975, TOOL_CALL_END]
# "It is sunny in Paris, 18 degrees."
TOOL_ANSWER = [2132, 374, 39698, 304, 12095, 11, 220, 16, 23, 12348, 13]


def vocabulary(src):
    vocab = gguf.GGUFReader(os.path.join(src, "vocab", "ggml-vocab-qwen2.gguf"))
    tokens = list(vocab.fields["tokenizer.ggml.tokens"].contents())
    types = list(vocab.fields["tokenizer.ggml.token_type"].contents())
    merges = list(vocab.fields["tokenizer.ggml.merges"].contents())
    for i, t in QWEN3_ADDED.items():
        tokens[i] = t
        types[i] = 3 if t.startswith("<|") else 4  # CONTROL / USER_DEFINED (not special in Qwen 3)
    return tokens, types, merges


def tables(mode, n_vocab):
    """token_embd, output, and the attention weights (None for the reasoning model)."""
    scripts = [REASONING] if mode == "reasoning" else [TOOL_CALL_SCRIPT, TOOL_ANSWER]
    dims = 1 + sum(len(s) for s in scripts)
    flag, marker = dims, dims + 1  # tools: the flag written by attention, </tool_response>'s dim
    ids = [t for s in scripts for t in s]
    assert len(set(ids)) == len(ids) and IM_END not in ids, "script tokens must be distinct"
    assert marker < N_EMBD
    embd = np.zeros((n_vocab, N_EMBD), dtype=np.float16)
    embd[:, 0] = 1
    out = np.zeros((n_vocab, N_EMBD), dtype=np.float16)
    d = 1
    for s in scripts:
        for k, t in enumerate(s):
            embd[t, 0] = 0
            embd[t, d] = 1
            out[s[k + 1] if k + 1 < len(s) else IM_END, d] = 30  # the next token of the script
            d += 1
    first = scripts[0][0]
    out[first, 0] = 10  # after any other token: the first script begins
    attn = None
    if mode == "tools":
        embd[TOOL_RESPONSE_END, 0] = 0
        embd[TOOL_RESPONSE_END, marker] = 1
        out[first, flag] = -10  # a tool result in the context: not the call again ...
        out[TOOL_ANSWER[0], flag] = 10  # ... but the answer (successors' 30 still win inside it)
        wq = np.zeros((N_EMBD, N_EMBD), dtype=np.float16)
        wq[31, :] = 1  # q = 8 e_31 for any one-hot input (RMS-normed: 8 e_m)
        wk = np.zeros((N_EMBD, N_EMBD), dtype=np.float16)
        wk[31, marker] = 1  # only </tool_response> has a key
        wv = np.zeros((N_EMBD, N_EMBD), dtype=np.float16)
        wv[0, marker] = 1.0 / 8  # its value: e_0 of the head
        wo = np.zeros((N_EMBD, N_EMBD), dtype=np.float16)
        wo[flag, 0] = 2  # written into the flag dimension
        # q_norm 4: q = 32 e_31 after the per-head RMSNorm; k = 8 e_31; score 32*8/sqrt(64) = 32.
        attn = (wq, wk, wv, wo, np.full(N_EMBD, 4.0, dtype=np.float32))
    return embd, out, attn


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("reasoning", "tools"):
        sys.exit(__doc__)
    mode, path = sys.argv[1], sys.argv[2]
    models = sys.argv[3] if len(sys.argv) > 3 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "models")
    src = os.path.join(models, "llama-cpp-python-0.3.36")
    tokens, types, merges = vocabulary(src)
    with open(os.path.join(src, "templates", "Qwen-Qwen3-0.6B.jinja"), encoding="utf-8") as f:
        template = f.read()
    embd, out, attn = tables(mode, len(tokens))

    w = gguf.GGUFWriter(path, "qwen3")
    w.add_name("scripted-qwen3-%s (bigram table, says fixed scripts)" % mode)
    w.add_block_count(1)
    w.add_context_length(4096)
    w.add_embedding_length(N_EMBD)
    w.add_feed_forward_length(N_EMBD)
    w.add_head_count(1)
    w.add_head_count_kv(1)
    w.add_key_length(N_EMBD)
    w.add_value_length(N_EMBD)
    w.add_rope_freq_base(1000000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_file_type(1)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_eos_token_id(IM_END)
    w.add_pad_token_id(ENDOFTEXT)
    w.add_add_bos_token(False)
    w.add_chat_template(template)
    ones = np.ones(N_EMBD, dtype=np.float32)
    zeros = np.zeros((N_EMBD, N_EMBD), dtype=np.float16)
    wq, wk, wv, wo, q_norm = attn if attn else (zeros, zeros, zeros, zeros, ones)
    w.add_tensor("token_embd.weight", embd)
    w.add_tensor("output_norm.weight", ones)
    w.add_tensor("output.weight", out)
    w.add_tensor("blk.0.attn_norm.weight", ones)
    for name, t in (("attn_q", wq), ("attn_k", wk), ("attn_v", wv), ("attn_output", wo),
                    ("ffn_gate", zeros), ("ffn_up", zeros), ("ffn_down", zeros)):
        w.add_tensor("blk.0.%s.weight" % name, t)
    w.add_tensor("blk.0.attn_q_norm.weight", q_norm)
    w.add_tensor("blk.0.attn_k_norm.weight", ones)
    w.add_tensor("blk.0.ffn_norm.weight", ones)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
