#include "panels/expert_model.h"

#include <string>
#include <variant>

#include "panels/panel_util.h"

namespace fluoro::ui {

bool ExpertState::consume(const Event& event) {
    if (const auto* rs = std::get_if<RunStarted>(&event)) {
        reset();
        run_ = rs->run;
        has_run_ = true;
        return true;
    }
    if (const auto* tok = std::get_if<TokenEvent>(&event)) {
        if (!has_run_ || tok->run != run_ || tok->index < 0) return false;
        if (size_t(tok->index) >= pieces_.size()) pieces_.resize(size_t(tok->index) + 1);
        pieces_[size_t(tok->index)] = piece_label(tok->piece);
        return false;  // the text shows only once a route names it
    }
    if (const auto* fin = std::get_if<RunFinished>(&event)) {
        if (!has_run_ || fin->run != run_) return false;
        finished_ = true;
        return steps_with_ == 0;  // the notice may change
    }
    const auto* s = std::get_if<StepEvent>(&event);
    if (!s || !has_run_ || s->run != run_) return false;
    if (!s->experts) {
        ++steps_without_;
        return steps_with_ == 0;  // the notice may change
    }
    const ExpertRouting& r = *s->experts;
    // A routing that cannot be read (expert_routing_error) or of another shape than the run's
    // earlier steps is not counted; the notice names the first such step.
    std::string why = expert_routing_error(r);
    if (why.empty() && !counts_.empty() &&
        (r.n_layer != n_layer_ || r.n_expert != n_expert_ || r.n_used != n_used_))
        why = std::to_string(r.n_layer) + " layers x " + std::to_string(r.n_expert) +
              " experts after steps of " + std::to_string(n_layer_) + " x " +
              std::to_string(n_expert_);
    if (!why.empty()) {
        // A decode step still feeds its token: keep its place so later tokens stay filed right.
        if (s->phase == StepPhase::Decode) routes_.resize(routes_.size() + size_t(s->tokens));
        if (bad_.isEmpty())
            bad_ = QStringLiteral("Step %1's expert routing was not counted: %2")
                       .arg(s->index)
                       .arg(QString::fromStdString(why));
        return true;
    }
    if (counts_.empty()) {
        n_layer_ = r.n_layer, n_expert_ = r.n_expert, n_used_ = r.n_used;
        counts_.assign(size_t(n_layer_) * size_t(n_expert_), 0);
    }
    for (size_t i = 0; i < r.experts.size(); ++i)
        if (const int32_t e = r.experts[i]; e >= 0)  // -1: a pass that skipped the layer
            ++counts_[size_t(int64_t(i) / (r.n_tokens * r.n_used)) * size_t(n_expert_) + size_t(e)];
    tokens_ += r.n_tokens;
    ++steps_with_;
    if (s->phase == StepPhase::Draft || s->phase == StepPhase::Verify) {
        speculative_tokens_ += r.n_tokens;
    } else if (s->phase == StepPhase::Decode) {
        // One decode step feeds one token; file each of its rows (a batched step, one per row).
        for (int64_t t = 0; t < r.n_tokens; ++t) {
            TokenRoute route;
            route.step = s->index;
            route.experts.reserve(size_t(r.n_layer) * size_t(r.n_used));
            route.weights.reserve(route.experts.capacity());
            for (int32_t il = 0; il < r.n_layer; ++il)
                for (int32_t j = 0; j < r.n_used; ++j) {
                    const size_t at = size_t((int64_t(il) * r.n_tokens + t) * r.n_used + j);
                    route.experts.push_back(r.experts[at]);
                    route.weights.push_back(at < r.weights.size() ? r.weights[at] : 0.0f);
                }
            routes_.push_back(std::move(route));
        }
    }
    return true;
}

int64_t ExpertState::layer_total(int32_t il) const {
    int64_t total = 0;
    for (int32_t e = 0; e < n_expert_; ++e) total += count(il, e);
    return total;
}

const ExpertState::TokenRoute* ExpertState::route_of(int64_t index) const {
    if (index < 0 || size_t(index) >= routes_.size()) return nullptr;
    const TokenRoute& r = routes_[size_t(index)];
    return r.experts.empty() ? nullptr : &r;  // empty: its step's routing was not readable
}

QString ExpertState::piece_of(int64_t index) const {
    if (index < 0 || size_t(index) >= pieces_.size()) return {};
    return pieces_[size_t(index)];
}

QString ExpertState::notice() const {
    if (!bad_.isEmpty()) return bad_;
    if (!has_run_)
        return QStringLiteral(
            "No run yet — expert routing appears here for a mixture-of-experts "
            "model (qwen3moe, Mixtral-style llama, olmoe, gpt-oss).");
    if (steps_with_ > 0) return {};
    if (steps_without_ > 0)
        return QStringLiteral(
            "No expert routing in this run: the model is dense (no experts), "
            "telemetry was Off, or the run was stored before the session database kept routing "
            "(schema 7).");
    if (finished_)
        return QStringLiteral(
            "No steps recorded for this run (telemetry Off): expert routing "
            "is recorded at telemetry Summary and above.");
    return QStringLiteral("Waiting for the run's first step …");
}

}  // namespace fluoro::ui
