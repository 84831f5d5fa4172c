#include "workbench/run_stats.h"

#include <QStringList>

namespace fluoro::ui {

void RunStats::add(const Event& e) {
    if (const auto* s = std::get_if<RunStarted>(&e)) {
        *this = RunStats{};
        prompt_tokens_ = s->prompt_tokens;
        ctx_ = s->ctx;
    } else if (const auto* t = std::get_if<TokenEvent>(&e)) {
        if (t->reasoning) reasoning_ns_ = t->t_ns;
        if (t->id < 0) return;  // a flush of leftover bytes, not a token
        if (t->reasoning) ++reasoning_tokens_;
        ++tokens_;
        if (first_token_ns_ < 0) first_token_ns_ = t->t_ns;
        last_token_ns_ = t->t_ns;
    } else if (const auto* st = std::get_if<StepEvent>(&e)) {
        if (st->phase == StepPhase::Prefill) {
            prefill_tokens_ += st->tokens;
            prefill_ns_ += st->end_ns - st->start_ns;
        }
    } else if (const auto* c = std::get_if<PrefixCacheEvent>(&e)) {
        cached_ = c->cached_tokens;
    } else if (const auto* sp = std::get_if<SpecStep>(&e)) {
        drafted_ += int64_t(sp->drafted.size());
        accepted_ += sp->accepted;
    } else if (const auto* f = std::get_if<RunFinished>(&e)) {
        stop_ = f->stop;
        tokens_ = f->n_tokens;
        if (f->stop != "error") {  // a failed run reports no counts
            reasoning_tokens_ = f->reasoning_tokens;
            reasoning_ns_ = f->reasoning_ns;
        }
        prompt_tokens_ = f->prompt_tokens;
        cached_ = f->cached_tokens;
        ttft_ms_ = f->ttft_ms;
        if (f->decode_ms > 0 && f->decode_steps > 0)
            decode_tps_ = double(f->decode_steps) * 1000.0 / f->decode_ms;
        if (f->prefill_ms > 0) {
            prefill_tokens_ = f->computed_tokens;
            prefill_ns_ = int64_t(f->prefill_ms * 1e6);
        }
    }
}

QString RunStats::line() const {
    QStringList parts;
    const std::optional<double> ttft =
        ttft_ms_
            ? ttft_ms_
            : (first_token_ns_ >= 0 ? std::optional<double>(first_token_ns_ / 1e6) : std::nullopt);
    if (ttft) parts << QStringLiteral("TTFT %1 ms").arg(*ttft, 0, 'f', 0);
    if (prefill_ns_ > 0 && prefill_tokens_ > 0)
        parts << QStringLiteral("prompt %1 tok/s")
                     .arg(prefill_tokens_ * 1e9 / double(prefill_ns_), 0, 'f', 0);
    std::optional<double> tps = decode_tps_;
    if (!tps && tokens_ > 1 && last_token_ns_ > first_token_ns_)
        tps = double(tokens_ - 1) * 1e9 / double(last_token_ns_ - first_token_ns_);
    if (tps) parts << QStringLiteral("decode %1 tok/s").arg(*tps, 0, 'f', 1);
    parts << QStringLiteral("%1 tokens").arg(tokens_);
    if (reasoning_tokens_ > 0) parts << QStringLiteral("%1 reasoning").arg(reasoning_tokens_);
    parts << QStringLiteral("%1 cached").arg(cached_);
    if (drafted_ > 0)
        parts << QStringLiteral("accepted %1%")
                     .arg(100.0 * double(accepted_) / double(drafted_), 0, 'f', 0);
    parts << (stop_ ? QStringLiteral("stop: %1").arg(QString::fromStdString(*stop_))
                    : QStringLiteral("generating…"));
    return parts.join(QStringLiteral(" · "));
}

}  // namespace fluoro::ui
