#include "decode/generate.h"

#include <chrono>

#include "core/error.h"
#include "decode/json_constraint.h"
#include "tokenizer/tokenizer.h"

namespace fluoro {

std::string_view stop_reason_name(StopReason r) {
    switch (r) {
        case StopReason::EndOfGeneration:
            return "eog";
        case StopReason::MaxTokens:
            return "max_tokens";
        case StopReason::ContextFull:
            return "context_full";
        case StopReason::Cancelled:
            return "cancelled";
        case StopReason::StopString:
            return "stop_string";
    }
    return "unknown";
}

bool cut_at_stop_string(GenerateResult& r, size_t piece_bytes, const GenerateOptions& opt) {
    if (opt.stop_strings.empty()) return false;
    const auto at = find_stop_string(r.text, r.text.size() - piece_bytes, opt.stop_strings);
    if (!at) return false;
    r.text.resize(*at);
    r.stop = StopReason::StopString;
    return true;
}

GenerateResult generate(Sequence& seq, const tok::Tokenizer& tokenizer,
                        std::span<const int32_t> prompt, Sampler& sampler,
                        const GenerateOptions& opt, const TokenCallback& on_token,
                        const std::atomic<bool>* cancel) {
    using Clock = std::chrono::steady_clock;
    const auto ms_since = [](Clock::time_point t) {
        return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
    };
    GenerateResult r;
    const auto start = Clock::now();
    std::span<const float> logits;
    try {
        logits = seq.prefill(prompt, &r.prefill, cancel);
    } catch (const Error&) {
        if (cancel && cancel->load()) {
            r.stop = StopReason::Cancelled;
            return r;
        }
        throw;
    }
    tok::StreamingDecoder detok(tokenizer, opt.render_special);
    Clock::time_point first_token_at{};
    std::vector<float> masked;  // the constraint's copy of the logits
    for (;;) {
        if (cancel && cancel->load()) {
            r.stop = StopReason::Cancelled;
            break;
        }
        std::span<const float> choices = logits;
        if (opt.constraint) {
            masked.assign(logits.begin(), logits.end());
            opt.constraint->mask(masked);
            choices = masked;
        }
        const SampledToken s = sampler.sample(choices, seq.tokens());
        if (r.tokens.empty() && r.ttft_ms == 0) {
            r.ttft_ms = ms_since(start);
            first_token_at = Clock::now();
        }
        if (tokenizer.vocab().is_eog(s.id)) {
            r.stop = StopReason::EndOfGeneration;
            break;
        }
        r.tokens.push_back(s.id);
        const std::string piece = detok.push(s.id);
        r.text += piece;
        if (opt.constraint) opt.constraint->accept(s.id);
        if (on_token) on_token(GeneratedToken{s.id, piece, &s, ms_since(start)});
        if (cut_at_stop_string(r, piece.size(), opt)) break;
        if (opt.constraint && opt.constraint->done()) {
            r.stop = StopReason::EndOfGeneration;  // the object is complete: as if EOG came
            break;
        }
        if (int64_t(r.tokens.size()) >= opt.max_tokens) {
            r.stop = StopReason::MaxTokens;
            break;
        }
        if (seq.remaining() <= 0) {
            r.stop = StopReason::ContextFull;
            break;
        }
        logits = seq.decode(s.id);
        ++r.decode_steps;
    }
    if (const std::string tail = detok.flush(); !tail.empty() && r.stop != StopReason::StopString) {
        r.text += tail;
        if (on_token) on_token(GeneratedToken{-1, tail, nullptr, ms_since(start)});
    }
    if (r.decode_steps > 0) r.decode_ms = ms_since(first_token_at);
    return r;
}

}  // namespace fluoro
