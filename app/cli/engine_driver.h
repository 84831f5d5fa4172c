// The CLI's side of an Engine: loads the model through it, submits a command, pumps the event
// stream on the calling thread until the run finishes — streaming tokens to stdout, forwarding
// every event to the store writer (--save) and to any other sink (a trace) — and turns Ctrl-C
// into Engine::cancel(). This is what `fluoro run`, `fluoro chat` and `fluoro trace` share: the
// same engine API the GUI uses.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "cli/engine_flags.h"
#include "cli/kv_policy_flags.h"
#include "decode/generate.h"
#include "runtime/engine.h"
#include "store/store_writer.h"

namespace fluoro::cli {

struct DriverOptions {
    std::string model;
    EngineFlags engine;
    SamplingFlags sampling;
    SpecFlags spec;
    KvPolicyFlags kv;
    int64_t max_tokens = 512;
    std::string system;
    bool save = false;
    std::string db;  // empty: the default location
    TelemetryLevel level = TelemetryLevel::Full;
    bool print_tokens = true;
};

// A finished run as the statistics line's GenerateResult (stats_line.h).
GenerateResult result_of(const RunFinished& f);

// Adds --save, --db and --telemetry to a command.
void add_save_flags(CLI::App& cmd, DriverOptions& o, std::string& level);
// Applies --telemetry's text to o.level (throws fluoro::Error naming the bad value).
void apply_level(DriverOptions& o, const std::string& level);

class EngineDriver {
  public:
    // Opens the store (when saving) and loads the model; throws fluoro::Error on failure.
    explicit EngineDriver(const DriverOptions& opt);
    ~EngineDriver();

    // Every event also goes here (after the store), on the calling thread.
    void set_sink(std::function<void(const Event&)> sink) { sink_ = std::move(sink); }
    // Runs the command and pumps events until its RunFinished; errors are printed to stderr and
    // returned as a RunFinished with stop "error". Saved runs are committed before returning.
    RunFinished run(Command c);
    // Runs a command that starts no generation (settings, a new conversation) and forwards its
    // events; throws fluoro::Error with its failure.
    void apply(Command c);
    void new_conversation();
    Engine& engine() { return engine_; }
    const ModelLoaded& model() const { return model_; }
    // The store's ids of the last saved run / conversation (0 when not saving).
    int64_t saved_run_id() const;
    int64_t saved_conversation_id() const;
    std::filesystem::path db_path() const;

  private:
    void forward(const Event& e);

    DriverOptions opt_;
    Engine engine_;
    std::unique_ptr<app::StoreWriter> writer_;
    std::function<void(const Event&)> sink_;
    ModelLoaded model_;
};

}  // namespace fluoro::cli
