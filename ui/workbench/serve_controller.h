// The workbench's OpenAI-compatible server: `fluoro serve` (app/server) over the window's own
// engine. Requests run through an EngineRelay fed by the EngineBridge's batches, so each one shows
// live in the chat and the panels, and is recorded in the session store, like a chat turn. With
// parallel slots (ServeConfig::parallel > 1) they run instead on a BatchEngine of the same model
// file and settings, several at once (continuous batching, `fluoro serve --parallel`): then they
// are listed, drawn in the Scheduler view (schedule()) and stored, not shown in the chat. The
// server's worker threads wait on the relay, never on the GUI thread's work; stop() (on the GUI
// thread) aborts the relay first, so it never waits for a batch only the GUI thread could deliver.
#pragma once

#include <QObject>
#include <QString>
#include <memory>

#include "server/batch_schedule.h"
#include "server/engine_relay.h"
#include "server/openai_server.h"

namespace fluoro::ui {

class EngineBridge;

struct ServeConfig {
    bool public_host = false;  // listen on 0.0.0.0, not only 127.0.0.1
    int port = 8080;           // 0: any free port
    QString api_key;           // non-empty: required as "Authorization: Bearer KEY"
    int max_queue = 16;
    SamplingParams sampling;  // defaults that requests override
    // Requests decoding at once; above 1, on a BatchEngine loaded with `model` (the window's
    // model settings) beside the window's engine.
    int parallel = 1;
    ModelSettings model;
};

class ServeController : public QObject {
    Q_OBJECT
  public:
    explicit ServeController(EngineBridge& bridge, QObject* parent = nullptr);
    ~ServeController() override;  // stop()

    // Starts serving the loaded model (restarts when running). Returns an empty string, or why
    // it could not (no model loaded, the port is taken).
    QString start(const ServeConfig& config);
    void stop();
    bool running() const { return server_ != nullptr; }
    int port() const { return port_; }
    QString url() const;  // "http://127.0.0.1:8080/v1"; empty when stopped
    // The batch's steps while serving with parallel slots; null otherwise.
    const std::shared_ptr<app::BatchSchedule>& schedule() const { return schedule_; }

  signals:
    void state_changed();  // started, stopped or restarted
    // A request was answered (on the GUI thread, in the order they finished).
    void request_served(const fluoro::app::RequestRecord& r);

  private:
    void on_model_changed();

    EngineBridge& bridge_;
    std::unique_ptr<app::EngineRelay> relay_;  // a fresh one per start: abort() is for good
    std::unique_ptr<BatchEngine> batch_;       // parallel slots only
    std::shared_ptr<app::BatchSchedule> schedule_;
    std::unique_ptr<app::OpenAiServer> server_;  // after batch_: stops first
    ServeConfig config_;
    QString model_path_;  // the model being served (a new one restarts the server)
    int port_ = 0;
};

}  // namespace fluoro::ui
