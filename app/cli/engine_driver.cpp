#include "cli/engine_driver.h"

#include <exception>
#include <iostream>

#include "cli/interrupt.h"
#include "core/error.h"
#include "session/backend_factory.h"
#include "session/loaded_model.h"
#include "store/data_dir.h"

namespace fluoro::cli {

using namespace std::chrono_literals;

GenerateResult result_of(const RunFinished& f) {
    GenerateResult r;
    r.tokens.assign(size_t(std::max<int64_t>(0, f.n_tokens)), 0);
    r.text = f.text;
    r.prefill = {f.prompt_tokens, f.cached_tokens, f.computed_tokens, f.prefill_ms};
    r.ttft_ms = f.ttft_ms;
    r.decode_ms = f.decode_ms;
    r.decode_steps = f.decode_steps;
    r.drafted_tokens = f.drafted_tokens;
    r.accepted_tokens = f.accepted_tokens;
    for (auto s : {StopReason::EndOfGeneration, StopReason::MaxTokens, StopReason::ContextFull,
                   StopReason::Cancelled, StopReason::StopString})
        if (stop_reason_name(s) == f.stop) r.stop = s;
    return r;
}

void add_save_flags(CLI::App& cmd, DriverOptions& o, std::string& level) {
    cmd.add_flag("--save", o.save,
                 "Store the conversation and its telemetry in the session database");
    cmd.add_option("--db", o.db,
                   "Session database (default: $XDG_DATA_HOME/fluoroscope/sessions.db)");
    cmd.add_option("--telemetry", level,
                   "Telemetry level with --save/--trace: off, summary, full or trace (every op)")
        ->capture_default_str();
}

void apply_level(DriverOptions& o, const std::string& level) {
    const auto l = parse_telemetry_level(level);
    if (!l) throw Error("--telemetry must be off, summary, full or trace, not '" + level + "'");
    o.level = *l;
}

EngineDriver::EngineDriver(const DriverOptions& opt)
    : opt_(opt), engine_(EngineOptions{opt.level, 64, 8, app::make_backend}) {
    if (opt_.save) {
        const std::filesystem::path db =
            opt_.db.empty() ? app::default_db_path() : std::filesystem::path(opt_.db);
        app::StoreWriterOptions wo;
        wo.on_error = [](const std::string& e) { std::cerr << "error: " << e << '\n'; };
        writer_ = std::make_unique<app::StoreWriter>(db, std::move(wo));
    }
    const ModelSettings ms = app::model_settings(opt_.engine.settings());
    ChangeSettings cs{opt_.sampling.params, opt_.max_tokens, opt_.system};
    cs.speculative = opt_.spec.parsed();
    cs.kv_policy = opt_.kv.parsed();
    engine_.submit(cs);
    engine_.submit_blocking(LoadModel{opt_.model, ms});
    for (auto& e : engine_.events().drain()) {
        if (const auto* m = std::get_if<ModelLoaded>(&e)) {
            model_ = *m;
            if (!m->prefix_cache_note.empty()) std::cerr << m->prefix_cache_note << '\n';
        }
        forward(e);
    }
    // The engine falls back to the full policy when the asked one does not fit the context
    // (the GUI's saved settings must not block a load); on the command line that is an error.
    if (const std::string bad = cs.kv_policy->problem(model_.ctx); !bad.empty()) throw Error(bad);
}

EngineDriver::~EngineDriver() = default;

void EngineDriver::forward(const Event& e) {
    if (writer_) writer_->record(e);
    if (sink_) sink_(e);
}

void EngineDriver::new_conversation() {
    engine_.submit(NewConversation{opt_.system});
}

void EngineDriver::apply(Command c) {
    std::exception_ptr failed;
    try {
        engine_.submit_blocking(std::move(c));
    } catch (const Error&) {
        failed = std::current_exception();
    }
    // Its events (and a failure's ErrorEvent) now, not at the start of the next run(), which
    // would take an ErrorEvent outside a run for its own failure.
    for (const Event& e : engine_.events().drain()) forward(e);
    if (failed) std::rethrow_exception(failed);
}

RunFinished EngineDriver::run(Command c) {
    std::atomic<bool>& interrupted = install_interrupt_flag();
    interrupted.store(false);
    engine_.submit(std::move(c));
    bool cancelled = false;
    for (;;) {
        if (interrupted.load() && !cancelled) {
            engine_.cancel();
            cancelled = true;
        }
        auto ev = engine_.events().pop(50ms);
        if (!ev) continue;
        forward(*ev);
        if (const auto* t = std::get_if<TokenEvent>(&*ev)) {
            if (opt_.print_tokens) std::cout << t->piece << std::flush;
        } else if (std::holds_alternative<RunStarted>(*ev)) {
            // The user message and the empty reply are on disk before the first token shows.
            if (writer_) writer_->flush();
        } else if (const auto* err = std::get_if<ErrorEvent>(&*ev)) {
            std::cerr << "error: " << err->message << '\n';
            // A prefix cache save failing after the previous run is not this command's failure.
            if (err->run == 0 && err->command != "save_prefix_cache") {  // failed before a run
                RunFinished f;
                f.stop = "error";
                f.error = err->message;
                return f;
            }
        } else if (const auto* fin = std::get_if<RunFinished>(&*ev)) {
            if (writer_) writer_->flush();
            return *fin;
        }
    }
}

int64_t EngineDriver::saved_run_id() const {
    return writer_ ? writer_->last_run_id() : 0;
}

int64_t EngineDriver::saved_conversation_id() const {
    return writer_ ? writer_->last_conversation_id() : 0;
}

std::filesystem::path EngineDriver::db_path() const {
    return writer_ ? writer_->path() : std::filesystem::path();
}

}  // namespace fluoro::cli
