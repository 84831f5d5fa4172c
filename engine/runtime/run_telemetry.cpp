#include "runtime/run_telemetry.h"

#include <utility>

#include "tokenizer/tokenizer.h"

namespace fluoro {

RunTelemetry::RunTelemetry(RunStarted started, const std::atomic<TelemetryLevel>& level,
                           ProfilingBackend& profiling, StepMeter::Clock::time_point run_start,
                           int64_t kv_snapshot_every, RunProbes probes, EventSink sink)
    : started_(std::move(started)),
      level_(level),
      profiling_(profiling),
      meter_(profiling, run_start),
      kv_snapshot_every_(kv_snapshot_every),
      probes_(std::move(probes)),
      sink_(std::move(sink)) {
    started_.wall_clock_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    started_.level = level_.load();
}

void RunTelemetry::announce(std::vector<int32_t> prompt_ids, std::vector<std::string> prompt_pieces,
                            std::vector<uint8_t> prompt_special) {
    prompt_tokens_ = int64_t(prompt_ids.size());
    started_.prompt_tokens = prompt_tokens_;
    started_.prompt_ids = std::move(prompt_ids);
    started_.prompt_pieces = std::move(prompt_pieces);
    started_.prompt_special = std::move(prompt_special);
    // The template's generation prompt may open the reasoning block itself (<think>\n): only
    // the tail matters, and a raw completion's prompt is the user's text, not a template's.
    std::string tail;
    for (size_t i = started_.prompt_pieces.size(); i-- > 0 && tail.size() < 64;)
        tail.insert(0, started_.prompt_pieces[i]);
    split_ = ReasoningSplitter(!started_.raw && prompt_opens_reasoning(tail));
    publish(started_);
    announced_ = true;
    apply_level(started_.level);
    profiling_.discard_trace();  // what ran between runs is no step of this one
}

void RunTelemetry::announce(const std::vector<int32_t>& prompt_ids,
                            const tok::Tokenizer& tokenizer) {
    const tok::Vocab& vocab = tokenizer.vocab();
    std::vector<std::string> pieces;
    std::vector<uint8_t> special;
    pieces.reserve(prompt_ids.size());
    special.reserve(prompt_ids.size());
    for (const int32_t id : prompt_ids) {
        pieces.push_back(tokenizer.token_to_piece(id, true));
        const tok::TokenType t = vocab.type(id);
        special.push_back(t == tok::TokenType::Control || t == tok::TokenType::UserDefined ||
                          t == tok::TokenType::Unknown);
    }
    announce(prompt_ids, std::move(pieces), std::move(special));
}

RunTelemetry::~RunTelemetry() {
    profiling_.set_tracing(false);
    profiling_.discard_trace();
}

void RunTelemetry::apply_level(TelemetryLevel level) {
    profiling_.set_timing(level >= TelemetryLevel::Full);
    profiling_.set_tracing(level == TelemetryLevel::Trace);
}

int64_t RunTelemetry::prefill_tokens(int64_t held_back) const {
    return prompt_tokens_ - held_back - (probes_.cached_tokens ? probes_.cached_tokens() : 0);
}

void RunTelemetry::close_step(TelemetryLevel level, StepPhase phase, int64_t tokens) {
    if (probes_.end_step) probes_.end_step(n_step_, meter_.now_ns());
    std::vector<KvEviction> evictions;
    if (probes_.take_evictions) evictions = probes_.take_evictions(n_step_);
    std::shared_ptr<const ExpertRouting> experts;
    if (probes_.take_experts) experts = probes_.take_experts();
    std::shared_ptr<StepTrace> trace;
    if (level == TelemetryLevel::Trace && profiling_.tracing())
        trace = profiling_.take_trace(meter_.run_start_ns());
    else
        profiling_.discard_trace();
    if (level == TelemetryLevel::Off) return meter_.restart();
    for (KvEviction& e : evictions) {
        e.t_ns = meter_.now_ns();
        publish(std::move(e));
    }
    StepEvent step =
        meter_.close(started_.run, n_step_++, phase, tokens, level >= TelemetryLevel::Full);
    step.experts = std::move(experts);
    step.trace = std::move(trace);
    publish(step);
    if (phase == StepPhase::Prefill && probes_.prefix)
        publish(probes_.prefix(prompt_tokens_, step.end_ns));
    if (level >= TelemetryLevel::Full) {
        emit_memory(step.end_ns);
        if (probes_.kv_snapshot &&
            (phase == StepPhase::Prefill || step.index % kv_snapshot_every_ == 0))
            publish(probes_.kv_snapshot(step.index, step.end_ns));
    }
}

void RunTelemetry::emit_token(const GeneratedToken& t, TelemetryLevel level) {
    apply_level(level);
    TokenEvent te;
    te.run = started_.run;
    te.index = n_token_++;
    te.id = t.id;
    te.piece = std::string(t.text);
    if (t.sample) {
        te.logprob = t.sample->logprob;
        if (level != TelemetryLevel::Off)
            te.top.assign(t.sample->top().begin(), t.sample->top().end());
    }
    if (probes_.token_text && t.id >= 0) {
        te.token_text = probes_.token_text(t.id);
        te.top_text.reserve(te.top.size());
        for (const TokenProb& p : te.top) te.top_text.push_back(probes_.token_text(p.id));
    }
    te.t_ns = meter_.now_ns();
    const bool before = split_.in_reasoning();
    ReasoningDelta d = split_.feed(
        t.id >= 0 && probes_.control_text ? probes_.control_text(t.id) + te.piece : te.piece);
    te.split = true;
    te.reasoning = before || split_.in_reasoning() || !d.reasoning.empty();
    if (te.reasoning) {
        if (t.id >= 0) ++reasoning_tokens_;
        reasoning_ns_ = te.t_ns;
    }
    reasoning_text_ += d.reasoning;
    answer_text_ += d.answer;
    te.reasoning_text = std::move(d.reasoning);
    te.answer_text = std::move(d.answer);
    publish(std::move(te));
}

void RunTelemetry::emit_memory(int64_t t_ns) {
    if (probes_.memory) publish(probes_.memory(t_ns));
}

void RunTelemetry::decoded(const GeneratedToken& t) {
    const TelemetryLevel level = level_.load();
    if (t.id >= 0) {  // a sampled token ends a step (the EOG token is never streamed)
        close_step(level, in_prefill_ ? StepPhase::Prefill : StepPhase::Decode,
                   in_prefill_ ? prefill_tokens(0) : 1);
        in_prefill_ = false;
    }
    emit_token(t, level);
}

void RunTelemetry::decode_done(const GenerateResult& r) {
    const int64_t forwards = (r.prefill.prompt_tokens > 0 ? 1 : 0) + r.decode_steps;
    if (forwards > int64_t(r.tokens.size()))
        close_step(level_.load(), in_prefill_ ? StepPhase::Prefill : StepPhase::Decode,
                   in_prefill_ ? prefill_tokens(0) : 1);
}

void RunTelemetry::prefilled() {
    // The prompt's last token is left to the first verification.
    close_step(level_.load(), StepPhase::Prefill, prefill_tokens(1));
    in_prefill_ = false;
}

void RunTelemetry::drafted(int32_t n) {
    if (n > 0) close_step(level_.load(), StepPhase::Draft, n);
}

void RunTelemetry::verified(const spec::SpecStepInfo& info, std::string_view drafter) {
    const TelemetryLevel level = level_.load();
    close_step(level, StepPhase::Verify, 1 + int64_t(info.drafted.size()));
    if (level == TelemetryLevel::Off || info.drafted.empty()) return;
    SpecStep st;
    st.run = started_.run;
    st.step = n_step_ - 1;
    st.drafter = std::string(drafter);
    for (size_t i = 0; i < info.drafted.size(); ++i)
        st.drafted.push_back(
            DraftToken{info.drafted[i], info.q[i], info.p[i], int32_t(i) < info.accepted});
    st.accepted = info.accepted;
    (info.kind == spec::NextKind::Bonus ? st.bonus : st.resampled) = info.next;
    st.draft_ns = int64_t(info.draft_ms * 1e6);
    st.verify_ns = int64_t(info.verify_ms * 1e6);
    st.t_ns = meter_.now_ns();
    publish(std::move(st));
}

void RunTelemetry::token(const GeneratedToken& t) {
    emit_token(t, level_.load());
}

spec::SpecCallbacks RunTelemetry::spec_callbacks(std::string drafter) {
    spec::SpecCallbacks cb;
    cb.on_prefilled = [this] { prefilled(); };
    cb.on_drafted = [this](int32_t n) { drafted(n); };
    cb.on_step = [this, drafter = std::move(drafter)](const spec::SpecStepInfo& info) {
        verified(info, drafter);
    };
    cb.on_token = [this](const GeneratedToken& t) { token(t); };
    return cb;
}

void RunTelemetry::finish(const GenerateResult& r) {
    const TelemetryLevel level = level_.load();
    // Levels Full and Trace reported the memory with every step.
    if (level == TelemetryLevel::Summary) emit_memory(now_ns());
    if (ReasoningDelta d = split_.finish(); !d.empty()) {
        TokenEvent te;
        te.run = started_.run;
        te.index = n_token_++;
        te.t_ns = now_ns();
        te.split = true;
        te.reasoning = !d.reasoning.empty();
        if (te.reasoning) reasoning_ns_ = te.t_ns;
        reasoning_text_ += d.reasoning;
        answer_text_ += d.answer;
        te.reasoning_text = std::move(d.reasoning);
        te.answer_text = std::move(d.answer);
        publish(std::move(te));
    }
    RunFinished fin;
    fin.run = started_.run;
    fin.stop = std::string(stop_reason_name(r.stop));
    fin.text = r.text;
    fin.n_tokens = int64_t(r.tokens.size());
    fin.prompt_tokens = r.prefill.prompt_tokens;
    fin.cached_tokens = r.prefill.reused_tokens;
    fin.computed_tokens = r.prefill.computed_tokens;
    fin.prefill_ms = r.prefill.ms;
    fin.ttft_ms = r.ttft_ms;
    fin.decode_ms = r.decode_ms;
    fin.decode_steps = r.decode_steps;
    fin.drafted_tokens = r.drafted_tokens;
    fin.accepted_tokens = r.accepted_tokens;
    fin.reasoning_tokens = reasoning_tokens_;
    fin.reasoning_ns = reasoning_ns_;
    fin.reasoning_text = reasoning_text_;
    fin.answer_text = answer_text_;
    fin.t_ns = now_ns();
    publish(std::move(fin));
}

void RunTelemetry::fail(std::string_view what, const ContextOverflowError* overflow) {
    if (!announced_) publish(started_);  // failed before it was announced (e.g. tokenizing)
    publish(ErrorEvent{started_.run, std::string(run_kind_name(started_.kind)), std::string(what),
                       now_ns(), started_.submission});
    RunFinished fin;
    fin.run = started_.run;
    fin.stop = "error";
    fin.error = std::string(what);
    if (overflow) {
        fin.overflow_prompt_tokens = overflow->prompt_tokens;
        fin.overflow_context_tokens = overflow->context_tokens;
    }
    fin.t_ns = now_ns();
    publish(std::move(fin));
}

}  // namespace fluoro
