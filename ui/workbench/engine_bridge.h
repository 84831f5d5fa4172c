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
}

namespace fluoro::ui {

class EngineBridge : public QObject {
    Q_OBJECT
  public:
    // db empty: no recording. A database that cannot be opened is reported by store_error()
    // (the bridge then runs without recording).
    explicit EngineBridge(const std::filesystem::path& db, QObject* parent = nullptr,
                          TelemetryLevel level = TelemetryLevel::Full);
    ~EngineBridge() override;

    Engine& engine() { return *engine_; }
    app::StoreWriter* writer() { return writer_.get(); }
    const QString& store_error() const { return store_error_; }
    const std::optional<ModelLoaded>& model() const { return model_; }
    bool generating() const { return generating_; }

    void load_model(const std::filesystem::path& path, const ModelSettings& s);
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
    void note(const Event& e);

    std::unique_ptr<app::StoreWriter> writer_;
    std::unique_ptr<Engine> engine_;
    QTimer timer_;
    QString store_error_;
    std::optional<ModelLoaded> model_;
    bool generating_ = false;
};

}  // namespace fluoro::ui
