#include "workbench/measure_runner.h"

#include <QMetaObject>
#include <QPointer>
#include <chrono>

namespace fluoro::ui {

MeasureRunner::MeasureRunner(QObject* parent) : QObject(parent) {}

MeasureRunner::~MeasureRunner() {
    cancel();
    if (thread_.joinable()) thread_.join();
}

void MeasureRunner::cancel() {
    if (cancel_) cancel_->store(true);
}

bool MeasureRunner::start(const app::MeasureRequest& request) {
    if (running_) return false;
    if (thread_.joinable()) thread_.join();  // the previous one has ended (running_ is false)
    running_ = true;
    cancel_ = std::make_shared<std::atomic<bool>>(false);
    // The thread talks to this object only through queued calls guarded by a QPointer, and the
    // destructor joins it, so no signal reaches a destroyed runner.
    QPointer<MeasureRunner> self(this);
    thread_ = std::thread([self, request, cancel = cancel_] {
        const auto t0 = std::chrono::steady_clock::now();
        auto post = [&self](auto f) {
            QMetaObject::invokeMethod(
                self.data(),
                [self, f] {
                    if (self) f(self.data());
                },
                Qt::QueuedConnection);
        };
        app::MeasureControl control;
        control.cancel = cancel.get();
        control.progress = [&](const std::string& what, double fraction) {
            post([w = QString::fromStdString(what), fraction](MeasureRunner* r) {
                emit r->progress(w, fraction);
            });
        };
        try {
            const nlohmann::json j = app::run_measurement(request, control);
            const double s =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            post([json = QString::fromStdString(
                      j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)),
                  s](MeasureRunner* r) {
                r->running_ = false;
                emit r->finished(json, s);
            });
        } catch (const app::MeasureCancelled&) {
            post([](MeasureRunner* r) {
                r->running_ = false;
                emit r->failed(tr("Cancelled."), true);
            });
        } catch (const std::exception& e) {
            post([m = QString::fromStdString(e.what())](MeasureRunner* r) {
                r->running_ = false;
                emit r->failed(m, false);
            });
        }
    });
    return true;
}

}  // namespace fluoro::ui
