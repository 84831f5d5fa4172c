// Runs one measurement (app/measure/measurement.h) off the GUI thread: its own thread with its
// own loaded copy of the model (the GGUF's mapped pages are shared with the engine's, but the
// matrices the CPU backend interleaves — Q4_1, Q5_0, Q8_0 — are copied, so a measurement holds
// about the model's size again in memory while it runs), progress and the result coming back as
// queued signals. Chats go on meanwhile, at the cost of sharing the CPU — so timings taken while
// chatting (decode tok/s, speedups) are not the machine's best; the window says so.
#pragma once

#include <QObject>
#include <QString>
#include <atomic>
#include <memory>
#include <thread>

#include "measure/measurement.h"

namespace fluoro::ui {

class MeasureRunner : public QObject {
    Q_OBJECT
  public:
    explicit MeasureRunner(QObject* parent = nullptr);
    ~MeasureRunner() override;  // cancels and waits for the thread

    // False (and nothing started) while one is running.
    bool start(const app::MeasureRequest& request);
    void cancel();
    bool running() const { return running_; }

  signals:
    void progress(const QString& what, double fraction);  // fraction -1: unknown
    // The measurement's JSON (run_measurement's) and its wall time.
    void finished(const QString& json, double seconds);
    void failed(const QString& message, bool cancelled);

  private:
    std::thread thread_;
    std::shared_ptr<std::atomic<bool>> cancel_;
    bool running_ = false;
};

}  // namespace fluoro::ui
