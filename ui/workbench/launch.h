// How the fluoroscope executable starts: its command-line options, where the default model and
// the bundled demo run are found, and the --screenshot / --demo modes.
#pragma once

#include <QString>
#include <map>
#include <optional>
#include <string>

#include "workbench/store_worker.h"

namespace fluoro::ui {

struct LaunchOptions {
    QString model;       // empty: the default model, else the last used one, else none
    QString db;          // empty: app::default_db_path()
    QString screenshot;  // render the window (or --panel's dock) to this file and exit
    QString prompt = QStringLiteral("Write a Python function that returns the square of a number.");
    QString panel;
    QString theme;  // "light", "dark", empty: as remembered
    bool demo = false;
    int max_tokens = 96;            // for --screenshot's generation
    int timeout_s = 300;            // --screenshot gives up after this long
    std::optional<int> serve_port;  // --serve: the API server starts once the model is loaded
    // --attach URL [--attach-model ID]: the chat goes to that server (File → Attach to server);
    // no local model is opened.
    QString attach, attach_model;
    // --measure KIND (ppl, eval_kv, bench_spec) with --screenshot: run that measurement from the
    // Measure menu's window (--measure-param KEY=VALUE each) and render that window instead.
    QString measure;
    std::map<std::string, std::string> measure_params;
};

// models/SmolLM2-135M-Instruct.Q4_1.gguf next to the install or the source tree, if present.
QString default_model_path();
// The bundled recorded run (resources/demo), parsed; throws fluoro::Error when unreadable.
ConversationPtr load_demo_run();
// Runs the workbench; returns the process exit code.
int run_workbench(const LaunchOptions& opt);

}  // namespace fluoro::ui
