// A multi-turn chat on one Sequence: keeps the messages, renders them with the model's chat
// template and tokenizes them so that only the template's own markup is parsed as special tokens
// (text a user types, such as "<|im_end|>", stays text), then generates the reply. Each turn
// reuses the KV of the previous turns: only the new tokens are prefilled.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "chat/chat_render.h"
#include "decode/generate.h"

namespace fluoro {

class Model;

class ChatSession {
  public:
    ChatSession(Model& model, Sequence& seq, SamplingParams sampling);

    // Adds the user message, generates the assistant reply (streamed through on_token) and adds
    // it to the history. On error or cancellation the history stays consistent (a cancelled reply
    // is kept as far as it got; an error removes the user message again).
    GenerateResult send(const std::string& user_text, const GenerateOptions& opt,
                        const TokenCallback& on_token = {},
                        const std::atomic<bool>* cancel = nullptr);

    void set_system_prompt(std::string text);    // applies from the next turn
    void set_sampling(const SamplingParams& p);  // validated; keeps the random stream
    const SamplingParams& sampling() const { return sampler_.params(); }
    void reset();  // forget the conversation and its KV
    const std::vector<ChatMessage>& messages() const { return messages_; }
    bool template_is_fallback() const;

    // The prompt ids for the current messages (+ generation prompt), as send() builds them.
    std::vector<int32_t> build_prompt() const;

  private:
    Model& model_;
    Sequence& seq_;
    Sampler sampler_;
    ChatRenderOptions render_opt_;
    std::string system_prompt_;
    std::vector<ChatMessage> messages_;
};

// Tokenizes a rendered conversation, parsing special tokens only outside message contents.
std::vector<int32_t> tokenize_chat(const Model& model, std::span<const ChatMessage> messages,
                                   const ChatRenderOptions& opt, bool add_generation_prompt);

}  // namespace fluoro
