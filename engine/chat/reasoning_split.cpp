#include "chat/reasoning_split.h"

#include <array>

namespace fluoro {

namespace {

constexpr std::string_view kOpen = "<think>", kClose = "</think>";
constexpr std::string_view kChannel = "<|channel|>", kMessage = "<|message|>", kStart = "<|start|>";
// Harmony markup that carries no text of its own.
constexpr std::array<std::string_view, 4> kDropped = {"<|end|>", "<|return|>", "<|call|>",
                                                      "<|constrain|>"};

}  // namespace

void ReasoningSplitter::emit(ReasoningDelta& d, std::string_view s) const {
    (in_reasoning_ ? d.reasoning : d.answer).append(s);
}

ReasoningDelta ReasoningSplitter::feed(std::string_view text) {
    ReasoningDelta d;
    held_.append(text);
    const std::string_view buf = held_;
    size_t pos = 0;
    while (pos < buf.size()) {
        if (mode_ == Mode::Header || mode_ == Mode::Channel) {
            // A role header (<|start|>assistant) ends at <|channel|> or <|message|>; a channel
            // name (analysis, final, "commentary to=functions.f") at <|message|>.
            const size_t msg = buf.find(kMessage, pos);
            const size_t chan = mode_ == Mode::Header ? buf.find(kChannel, pos) : buf.npos;
            if (msg == buf.npos && chan == buf.npos) break;  // wait for the rest of it
            if (chan < msg) {
                mode_ = Mode::Channel;
                pos = chan + kChannel.size();
                continue;
            }
            if (mode_ == Mode::Channel) {
                const std::string_view name = buf.substr(pos, msg - pos);
                const size_t end = name.find_first_of(" <");
                in_reasoning_ = name.substr(0, end) == "analysis";
            }
            mode_ = Mode::Text;
            pos = msg + kMessage.size();
            continue;
        }
        const size_t lt = buf.find('<', pos);
        if (lt == buf.npos) {
            emit(d, buf.substr(pos));
            pos = buf.size();
            break;
        }
        emit(d, buf.substr(pos, lt - pos));
        pos = lt;
        const std::string_view rest = buf.substr(pos);
        const auto is = [&](std::string_view m) { return rest.starts_with(m); };
        const auto partial = [&](std::string_view m) {
            return rest.size() < m.size() && m.starts_with(rest);
        };
        bool hold = false, dropped = false;
        for (const std::string_view m : kDropped) {
            if (is(m)) {
                pos += m.size();
                dropped = true;
                break;
            }
            hold = hold || partial(m);
        }
        if (dropped) continue;
        if (is(kOpen)) {
            in_reasoning_ = true;
            pos += kOpen.size();
        } else if (is(kClose)) {
            in_reasoning_ = false;
            pos += kClose.size();
        } else if (is(kChannel)) {
            mode_ = Mode::Channel;
            pos += kChannel.size();
        } else if (is(kStart)) {
            mode_ = Mode::Header;
            pos += kStart.size();
        } else if (is(kMessage)) {
            pos += kMessage.size();  // a message with no channel: the state stays
        } else if (hold || partial(kOpen) || partial(kClose) || partial(kChannel) ||
                   partial(kStart) || partial(kMessage)) {
            break;  // the next feed decides
        } else {
            emit(d, "<");
            ++pos;
        }
    }
    held_.erase(0, pos);
    return d;
}

ReasoningDelta ReasoningSplitter::finish() {
    ReasoningDelta d;
    // A partial marker, or a header that never reached <|message|>: it was text after all.
    emit(d, held_);
    held_.clear();
    mode_ = Mode::Text;
    return d;
}

bool is_reasoning_markup(std::string_view token_text) {
    for (const std::string_view m : kDropped)
        if (token_text == m) return true;
    return token_text == kOpen || token_text == kClose || token_text == kChannel ||
           token_text == kMessage || token_text == kStart;
}

bool prompt_opens_reasoning(std::string_view prompt_text) {
    const size_t last = prompt_text.find_last_not_of(" \t\r\n");
    if (last == prompt_text.npos) return false;
    const std::string_view t = prompt_text.substr(0, last + 1);
    return t.ends_with(kOpen) || t.ends_with("<|channel|>analysis<|message|>");
}

}  // namespace fluoro
