// Separates a model's reasoning from its answer in generated text, incrementally (as tokens
// stream in). Two conventions:
//   - <think> … </think> (Qwen 3, DeepSeek-R1, SmolLM3): the text between the tags is reasoning.
//     Templates often open <think> in the generation prompt, so the output starts inside the
//     block and only </think> appears: construct with starts_in_reasoning (see
//     prompt_opens_reasoning()).
//   - gpt-oss channels (harmony): <|channel|>analysis<|message|>… is reasoning, any other
//     channel (final, commentary) answer; <|start|>role headers, <|end|>, <|return|>, <|call|>
//     are markup. These are control tokens: the caller feeds their text (the stream itself does
//     not render them).
// Markers are removed from both outputs. A possible marker split across feeds ("</thi" + "nk>")
// is held back until the next feed decides it; finish() releases what is still held.
// An unclosed block stays reasoning to the end; text with no markers is all answer.
#pragma once

#include <string>
#include <string_view>

namespace fluoro {

struct ReasoningDelta {
    std::string reasoning;  // text added to the reasoning
    std::string answer;     // text added to the answer
    bool empty() const { return reasoning.empty() && answer.empty(); }
};

class ReasoningSplitter {
  public:
    explicit ReasoningSplitter(bool starts_in_reasoning = false)
        : in_reasoning_(starts_in_reasoning) {}

    ReasoningDelta feed(std::string_view text);
    ReasoningDelta finish();

    // Whether the text fed so far ends inside a reasoning block (a held-back partial marker
    // not counted).
    bool in_reasoning() const { return in_reasoning_; }

  private:
    enum class Mode { Text, Header, Channel };
    void emit(ReasoningDelta& d, std::string_view s) const;

    std::string held_;
    bool in_reasoning_ = false;
    Mode mode_ = Mode::Text;
};

// Whether `token_text` (a whole token's text) is one of the markers the splitter reads: what a
// caller feeds for a control token the stream does not render (other control tokens' text would
// only add markup to the answer).
bool is_reasoning_markup(std::string_view token_text);

// Whether a rendered prompt leaves the model inside an open reasoning block: its text, trailing
// whitespace aside, ends with "<think>" (e.g. Qwen 3 / DeepSeek-R1 generation prompts) or with
// "<|channel|>analysis<|message|>".
bool prompt_opens_reasoning(std::string_view prompt_text);

}  // namespace fluoro
