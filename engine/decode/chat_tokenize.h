// Tokenizes a conversation for the model: renders it with the model's chat format (its own Jinja
// template, chat/chat_format.h) and parses special tokens only in the template's own markup, so
// text a user types (such as "<|im_end|>") stays text. The Engine builds every chat prompt with
// it; the evaluations use it too.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "chat/chat_format.h"
#include "chat/chat_render.h"

namespace fluoro {

class Model;

// Tokenizes a rendered conversation, parsing special tokens only outside message contents.
// Throws Error with the template's message when it refuses the conversation, and when a message
// holds special-token text that the template rewrites (then its place in the prompt is unknown).
std::vector<int32_t> tokenize_chat(const Model& model, std::span<const ChatMessage> messages,
                                   bool add_generation_prompt, const ChatExtras& extras = {});

}  // namespace fluoro
