// The "API server" dock: starts and stops the workbench's OpenAI-compatible server
// (ServeController), with its port, host and API key, and lists every request it answered as
// they finish (client, status, prompt / cached / completion tokens, stop reason, time) with
// running totals. The requests themselves show in the chat and the panels as they run.
#pragma once

#include <QWidget>
#include <functional>
#include <optional>

#include "runtime/engine_commands.h"
#include "server/openai_server.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace fluoro::ui {

class ServeController;

class ServerPanel : public QWidget {
    Q_OBJECT
  public:
    ServerPanel(ServeController& serve, QWidget* parent = nullptr);

    // Where the server's default sampling comes from when it starts (the Settings panel's).
    void set_sampling_source(std::function<std::optional<SamplingParams>()> f) {
        sampling_ = std::move(f);
    }
    // The model settings a batching engine loads with (parallel slots above 1): the window's.
    void set_model_settings_source(std::function<ModelSettings()> f) {
        model_settings_ = std::move(f);
    }
    void set_parallel(int n);
    // Starts (true) or stops the server, as the toggle button does; returns why it could not
    // start (also shown in the panel), empty on success.
    QString set_serving(bool on);
    void set_port(int port);
    int requests_listed() const;

  signals:
    void serving_changed(bool serving);

  private:
    void on_state_changed();
    void add_request(const app::RequestRecord& r);

    ServeController& serve_;
    std::function<std::optional<SamplingParams>()> sampling_;
    std::function<ModelSettings()> model_settings_;
    QSpinBox* parallel_;
    QPushButton* toggle_;
    QLabel* status_;
    QSpinBox* port_;
    QCheckBox* public_;
    QLineEdit* key_;
    QLabel* totals_;
    QTableWidget* log_;
    int64_t requests_ = 0, prompt_ = 0, cached_ = 0, completion_ = 0, failed_ = 0;
};

}  // namespace fluoro::ui
