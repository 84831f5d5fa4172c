// The GUI's side of the Engine: owns it (and the StoreWriter that records every run), submits the
// window's commands, and on a 16 ms timer on the GUI thread drains the event stream — which never
// waits — and hands each batch to the recorder and then, as one signal, to the chat view, the
// panels and the gauges. One batch per tick: redraws are coalesced to at most ~60 Hz by
// construction. Nothing here waits on the engine or on SQLite.
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "runtime/engine_commands.h"
#include "settings/settings.h"  // TelemetryLevel
#include "store/store_writer.h"
#include "telemetry/events.h"

namespace fluoro {
class Engine;  // declared only: engine.h is included where engine() is called
namespace app {
class RemoteEngine;
struct RemoteAttach;
}  // namespace app
}  // namespace fluoro

namespace fluoro::ui {

class EngineBridge : public QObject {
    Q_OBJECT
  public:
    // db empty: no recording. A database that cannot be opened is reported by store_error()
    // (the bridge then runs without recording).
    explicit EngineBridge(const std::filesystem::path& db, QObject* parent = nullptr,
                          TelemetryLevel level = TelemetryLevel::Full);
    ~EngineBridge() override;

    // The local engine (the window's API server serves it, attached or not).
    Engine& engine() { return *engine_; }
    app::StoreWriter* writer() { return writer_.get(); }
    const QString& store_error() const { return store_error_; }
    const std::optional<ModelLoaded>& model() const { return model_; }
    bool generating() const { return generating_; }

    // Detaches from a remote server first.
    void load_model(const std::filesystem::path& path, const ModelSettings& s);
    // The window's chat goes to a remote OpenAI-compatible server (app/remote/remote_engine.h)
    // instead of the local engine, whose model stays loaded for the API server: commands go
    // there, its events come like the engine's (recorded, shown). Its ModelLoaded, or a
    // load_model error (then it detaches), follows. Throws Error for a URL it cannot parse.
    void attach(const app::RemoteAttach& a);
    // Back to the local engine (its model, if one is loaded, is the window's again).
    void detach();
    bool attached() const { return remote_ != nullptr; }
    // Returns the engine's submission number (RunStarted / ConversationStarted carry it).
    uint64_t submit(Command c);
    void submit_tagged(const QString& tag, Command c);
    void stop();
    // Drains now (the timer does it every 16 ms); public for tests.
    void pump();

  signals:
    // Every event in engine order, after the recorder has queued them.
    void events_arrived(const std::vector<fluoro::Event>& batch);
    void model_changed();  // a ModelLoaded / ModelUnloaded arrived, or a load failed
    void generating_changed(bool generating);
    void error(const QString& message);

  private:
    void note(const Event& e, bool remote);

    std::unique_ptr<app::StoreWriter> writer_;
    std::unique_ptr<Engine> engine_;
    std::unique_ptr<app::RemoteEngine> remote_;
    std::optional<ModelLoaded> local_model_;  // the local engine's, while attached
    bool detach_after_pump_ = false;          // the attach failed
    QTimer timer_;
    QString store_error_;
    std::optional<ModelLoaded> model_;
    bool generating_ = false;
};

}  // namespace fluoro::ui
