#include "export/run_collector.h"

#include "common/version.h"
#include "store/iso_time.h"

namespace fluoro::app {

void RunCollector::add(const Event& e) {
    if (const auto* s = std::get_if<RunStarted>(&e)) {
        if (engine_run_ != 0) return;
        engine_run_ = s->run;
        run_.id = int64_t(s->run);
        run_.kind = std::string(run_kind_name(s->kind));
        run_.model_path = s->model_path;
        run_.model_name = s->model_name;
        run_.program_version = std::string(version());
        run_.telemetry_level = std::string(telemetry_level_name(s->level));
        run_.started_at = iso_time_utc(s->wall_clock_ms);
        run_.prompt_tokens = s->prompt_tokens;
        run_.prompt_ids = s->prompt_ids;
        run_.prompt_pieces = s->prompt_pieces;
        return;
    }
    if (engine_run_ == 0 || finished_ || event_run(e) != engine_run_) return;
    if (const auto* t = std::get_if<TokenEvent>(&e)) {
        run_.tokens.push_back(*t);
    } else if (const auto* st = std::get_if<StepEvent>(&e)) {
        run_.steps.push_back(*st);
    } else if (const auto* c = std::get_if<PrefixCacheEvent>(&e)) {
        run_.cache_events.push_back(*c);
    } else if (const auto* m = std::get_if<MemoryCounters>(&e)) {
        run_.memory.push_back(*m);
    } else if (const auto* sp = std::get_if<SpecStep>(&e)) {
        run_.spec_steps.push_back(*sp);
    } else if (const auto* kv = std::get_if<std::shared_ptr<const KvSnapshot>>(&e)) {
        run_.kv_snapshots.push_back(*kv);
    } else if (const auto* at = std::get_if<std::shared_ptr<const AttentionSnapshot>>(&e)) {
        run_.attention_snapshots.push_back(*at);
    } else if (const auto* as = std::get_if<AttentionStats>(&e)) {
        run_.attention_stats.push_back(*as);
    } else if (const auto* ev = std::get_if<KvEviction>(&e)) {
        run_.kv_evictions.push_back(*ev);
    } else if (const auto* f = std::get_if<RunFinished>(&e)) {
        run_.stop_reason = f->stop;
        if (!f->error.empty()) run_.error = f->error;
        run_.n_tokens = f->n_tokens;
        run_.cached_tokens = f->cached_tokens;
        run_.computed_tokens = f->computed_tokens;
        run_.prefill_ms = f->prefill_ms;
        run_.ttft_ms = f->ttft_ms;
        run_.decode_ms = f->decode_ms;
        run_.decode_steps = f->decode_steps;
        run_.duration_ns = f->t_ns;
        run_.drafted_tokens = f->drafted_tokens;
        run_.accepted_tokens = f->accepted_tokens;
        finished_ = true;
    }
}

}  // namespace fluoro::app
