#!/usr/bin/env python3
"""Writes a qwen3 GGUF that answers every prompt with the same script, for looking at the
workbench's reasoning display on a real reasoning template when no small reasoning model can be
fetched (none is on PyPI): Qwen 3's vocabulary (llama.cpp's ggml-vocab-qwen2.gguf with Qwen 3's
added tokens - <think>, </think>, <tool_call>, ... - at their Qwen 3 ids) and Qwen 3 0.6B's own
chat template (models/templates/Qwen-Qwen3-0.6B.jinja), both from the pinned llama-cpp-python
sdist (scripts/fetch-llama-cpp-source.sh unpacks them under models/).

The model is a bigram table, not a language model: one layer whose attention output and FFN down
projection are zero, so the residual stream is the token's embedding. Token i of the script has the
one-hot embedding e_(i+1), every other token e_0; after the final RMSNorm that is sqrt(64) * e_k,
and the LM head maps dimension k to the next script token with logit 8 * 10 = 80 against 0 for the
rest. So after any prompt the model says SCRIPT, then <|im_end|>. The script's tokens must be
distinct (a bigram cannot count). Nothing here measures anything: its output is fixed by design.
Usage: python3 tests/reference/make_scripted_model.py OUT.gguf [MODELS_DIR]
"""
from __future__ import annotations

import os
import sys

import numpy as np
import gguf

SCRIPT = "<think>The user says hello; a short greeting back is enough.</think>Hello there! How can I help?"

QWEN3_ADDED = {  # Qwen 3's added tokens beyond Qwen 2's <|endoftext|>, <|im_start|>, <|im_end|>
    151646: "<|object_ref_start|>", 151647: "<|object_ref_end|>", 151648: "<|box_start|>",
    151649: "<|box_end|>", 151650: "<|quad_start|>", 151651: "<|quad_end|>",
    151652: "<|vision_start|>", 151653: "<|vision_end|>", 151654: "<|vision_pad|>",
    151655: "<|image_pad|>", 151656: "<|video_pad|>", 151657: "<tool_call>", 151658: "</tool_call>",
    151659: "<|fim_prefix|>", 151660: "<|fim_middle|>", 151661: "<|fim_suffix|>",
    151662: "<|fim_pad|>", 151663: "<|repo_name|>", 151664: "<|file_sep|>",
    151665: "<tool_response>", 151666: "</tool_response>", 151667: "<think>", 151668: "</think>",
}
N_EMBD = 64


def main() -> None:
    out = sys.argv[1]
    models = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(__file__), "..", "..", "models")
    src = os.path.join(models, "llama-cpp-python-0.3.36")
    vocab = gguf.GGUFReader(os.path.join(src, "vocab", "ggml-vocab-qwen2.gguf"))
    tokens = list(vocab.fields["tokenizer.ggml.tokens"].contents())
    types = list(vocab.fields["tokenizer.ggml.token_type"].contents())
    merges = list(vocab.fields["tokenizer.ggml.merges"].contents())
    for i, t in QWEN3_ADDED.items():
        tokens[i] = t
        types[i] = 4 if not t.startswith("<|") else 3  # USER_DEFINED (Qwen 3: not special) / CONTROL
    with open(os.path.join(src, "templates", "Qwen-Qwen3-0.6B.jinja"), encoding="utf-8") as f:
        template = f.read()

    # Tokenize the script with the vocabulary itself: byte-level BPE over the text between the
    # two added tokens it uses, through llama.cpp's tokenizer on the vocab-only file.
    import llama_cpp
    llm = llama_cpp.Llama(os.path.join(src, "vocab", "ggml-vocab-qwen2.gguf"), vocab_only=True,
                          verbose=False)
    ids: list[int] = []
    rest = SCRIPT
    for marker in ("<think>", "</think>"):
        head, _, rest = rest.partition(marker)
        if head:
            ids += llm.tokenize(head.encode(), add_bos=False, special=False)
        ids.append(next(i for i, t in QWEN3_ADDED.items() if t == marker))
    ids += llm.tokenize(rest.encode(), add_bos=False, special=False)
    im_end = tokens.index("<|im_end|>")
    if len(set(ids)) != len(ids) or im_end in ids:
        sys.exit("the script's tokens are not distinct: a bigram model cannot say it: %s" % ids)
    if len(ids) + 1 > N_EMBD:
        sys.exit("script too long for n_embd %d" % N_EMBD)

    n_vocab = len(tokens)
    embd = np.zeros((n_vocab, N_EMBD), dtype=np.float16)
    embd[:, 0] = 1
    out_w = np.zeros((n_vocab, N_EMBD), dtype=np.float16)
    out_w[ids[0], 0] = 10  # any token outside the script: begin it
    for k, t in enumerate(ids):
        embd[t, 0] = 0
        embd[t, k + 1] = 1
        nxt = ids[k + 1] if k + 1 < len(ids) else im_end
        out_w[nxt, k + 1] = 10

    w = gguf.GGUFWriter(out, "qwen3")
    w.add_name("scripted-qwen3 (bigram, says a fixed script)")
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
    w.add_eos_token_id(im_end)
    w.add_pad_token_id(tokens.index("<|endoftext|>"))
    w.add_add_bos_token(False)
    w.add_chat_template(template)
    ones = np.ones(N_EMBD, dtype=np.float32)
    zeros = np.zeros((N_EMBD, N_EMBD), dtype=np.float16)
    w.add_tensor("token_embd.weight", embd)
    w.add_tensor("output_norm.weight", ones)
    w.add_tensor("output.weight", out_w)
    w.add_tensor("blk.0.attn_norm.weight", ones)
    for name in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"):
        w.add_tensor("blk.0.%s.weight" % name, zeros)
    w.add_tensor("blk.0.attn_q_norm.weight", ones)
    w.add_tensor("blk.0.attn_k_norm.weight", ones)
    w.add_tensor("blk.0.ffn_norm.weight", ones)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("%s: %d script tokens %s" % (out, len(ids), ids))


if __name__ == "__main__":
    main()
