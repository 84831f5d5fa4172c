#include "workbench/engine_bridge.h"

#include <QMetaObject>

#include "core/error.h"
#include "runtime/engine.h"
#include "session/backend_factory.h"

namespace fluoro::ui {

EngineBridge::EngineBridge(const std::filesystem::path& db, QObject* parent, TelemetryLevel level)
    : QObject(parent) {
    if (!db.empty()) {
        try {
            app::StoreWriterOptions wo;
            // Called on the writer thread: hop to ours through the event loop.
            wo.on_error = [this](const std::string& e) {
                QMetaObject::invokeMethod(
                    this, [this, m = QString::fromStdString(e)] { emit error(m); },
                    Qt::QueuedConnection);
            };
            writer_ = std::make_unique<app::StoreWriter>(db, std::move(wo));
        } catch (const std::exception& e) {
            store_error_ = QString::fromStdString(e.what());
        }
    }
    engine_ = std::make_unique<Engine>(EngineOptions{level, 64, 8, app::make_backend});
    timer_.setInterval(16);
    connect(&timer_, &QTimer::timeout, this, &EngineBridge::pump);
    timer_.start();
}

EngineBridge::~EngineBridge() {
    timer_.stop();
    engine_.reset();  // cancels the run and joins the engine thread
    writer_.reset();  // writes what is queued
}

void EngineBridge::stop() {
    engine_->cancel();
}

void EngineBridge::load_model(const std::filesystem::path& path, const ModelSettings& s) {
    submit(LoadModel{path, s});
}

uint64_t EngineBridge::submit(Command c) {
    return engine_->submit(std::move(c));
}

void EngineBridge::submit_tagged(const QString& tag, Command c) {
    engine_->submit_tagged(tag.toStdString(), std::move(c));
}

void EngineBridge::note(const Event& e) {
    if (const auto* m = std::get_if<ModelLoaded>(&e)) {
        model_ = *m;
        emit model_changed();
    } else if (std::holds_alternative<ModelUnloaded>(e)) {
        model_.reset();
        emit model_changed();
    } else if (std::holds_alternative<RunStarted>(e)) {
        if (!generating_) emit generating_changed(generating_ = true);
    } else if (std::holds_alternative<RunFinished>(e)) {
        if (generating_) emit generating_changed(generating_ = false);
    } else if (const auto* err = std::get_if<ErrorEvent>(&e)) {
        emit error(QString::fromStdString(err->command + ": " + err->message));
        if (err->command == "load_model") emit model_changed();
    }
}

void EngineBridge::pump() {
    std::vector<Event> batch = engine_->events().drain();
    if (batch.empty()) return;
    if (writer_)
        for (const Event& e : batch) writer_->record(e);  // copies; snapshots are shared_ptr
    for (const Event& e : batch) note(e);
    emit events_arrived(batch);
}

}  // namespace fluoro::ui
