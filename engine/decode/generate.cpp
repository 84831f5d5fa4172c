#include "decode/generate.h"

#include <chrono>
#include <string>
#include <vector>

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

struct TokenLoop::Detail {
    tok::StreamingDecoder detok;
    std::vector<float> masked;  // the constraint's copy of the logits
};

TokenLoop::TokenLoop(const tok::Tokenizer& tokenizer, Sampler& sampler, const GenerateOptions& opt,
                     Clock::time_point start)
    : tokenizer_(tokenizer),
      sampler_(sampler),
      opt_(opt),
      start_(start),
      d_(std::make_unique<Detail>(
          Detail{tok::StreamingDecoder(tokenizer, opt.render_special), {}})) {}

TokenLoop::~TokenLoop() = default;

double TokenLoop::ms_since_start() const {
    return std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
}

std::optional<int32_t> TokenLoop::next(std::span<const float> logits, const Sequence& seq,
                                       const TokenCallback& on_token) {
    std::span<const float> choices = logits;
    if (opt_.constraint) {
        d_->masked.assign(logits.begin(), logits.end());
        opt_.constraint->mask(d_->masked);
        choices = d_->masked;
    }
    const SampledToken s = sampler_.sample(choices, seq.tokens());
    if (r_.tokens.empty() && r_.ttft_ms == 0) {
        r_.ttft_ms = ms_since_start();
        first_token_at_ = Clock::now();
    }
    if (tokenizer_.vocab().is_eog(s.id)) {
        r_.stop = StopReason::EndOfGeneration;
        return std::nullopt;
    }
    r_.tokens.push_back(s.id);
    const std::string piece = d_->detok.push(s.id);
    r_.text += piece;
    if (opt_.constraint) opt_.constraint->accept(s.id);
    if (on_token) on_token(GeneratedToken{s.id, piece, &s, ms_since_start()});
    if (cut_at_stop_string(r_, piece.size(), opt_)) return std::nullopt;
    if (opt_.constraint && opt_.constraint->done()) {
        r_.stop = StopReason::EndOfGeneration;  // the object is complete: as if EOG came
        return std::nullopt;
    }
    if (int64_t(r_.tokens.size()) >= opt_.max_tokens) {
        r_.stop = StopReason::MaxTokens;
        return std::nullopt;
    }
    if (seq.remaining() <= 0) {
        r_.stop = StopReason::ContextFull;
        return std::nullopt;
    }
    return s.id;
}

GenerateResult& TokenLoop::finish(const TokenCallback& on_token, bool cancelled) {
    if (cancelled) r_.stop = StopReason::Cancelled;
    if (const std::string tail = d_->detok.flush();
        !tail.empty() && r_.stop != StopReason::StopString) {
        r_.text += tail;
        if (on_token) on_token(GeneratedToken{-1, tail, nullptr, ms_since_start()});
    }
    if (r_.decode_steps > 0)
        r_.decode_ms =
            std::chrono::duration<double, std::milli>(Clock::now() - first_token_at_).count();
    return r_;
}

GenerateResult generate(Sequence& seq, const tok::Tokenizer& tokenizer,
                        std::span<const int32_t> prompt, Sampler& sampler,
                        const GenerateOptions& opt, const TokenCallback& on_token,
                        const std::atomic<bool>* cancel) {
    TokenLoop loop(tokenizer, sampler, opt, TokenLoop::Clock::now());
    std::span<const float> logits;
    try {
        logits = seq.prefill(prompt, &loop.result().prefill, cancel);
    } catch (const Error&) {
        if (cancel && cancel->load()) {
            loop.result().stop = StopReason::Cancelled;
            return std::move(loop.result());
        }
        throw;
    }
    for (;;) {
        if (cancel && cancel->load()) return std::move(loop.finish(on_token, true));
        const std::optional<int32_t> next = loop.next(logits, seq, on_token);
        if (!next) break;
        logits = seq.decode(*next);
        loop.stepped();
    }
    return std::move(loop.finish(on_token));
}

}  // namespace fluoro
