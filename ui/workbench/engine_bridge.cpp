#include "workbench/engine_bridge.h"

#include <QMetaObject>

#include "core/error.h"
#include "remote/remote_engine.h"
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
    remote_.reset();
    engine_.reset();  // cancels the run and joins the engine thread
    writer_.reset();  // writes what is queued
}

void EngineBridge::stop() {
    if (remote_) remote_->cancel();
    engine_->cancel();
}

void EngineBridge::load_model(const std::filesystem::path& path, const ModelSettings& s) {
    detach();
    submit(LoadModel{path, s});
}

void EngineBridge::attach(const app::RemoteAttach& a) {
    auto remote = std::make_unique<app::RemoteEngine>(a);  // throws for a bad URL
    detach();
    local_model_ = model_;
    remote_ = std::move(remote);
    model_.reset();
    emit model_changed();
}

void EngineBridge::detach() {
    if (!remote_) return;
    remote_.reset();  // cancels its request, joins its thread
    detach_after_pump_ = false;
    model_ = local_model_;
    local_model_.reset();
    if (generating_) emit generating_changed(generating_ = false);
    emit model_changed();
}

uint64_t EngineBridge::submit(Command c) {
    return remote_ ? remote_->submit(std::move(c)) : engine_->submit(std::move(c));
}

void EngineBridge::submit_tagged(const QString& tag, Command c) {
    if (remote_)
        remote_->submit_tagged(tag.toStdString(), std::move(c));
    else
        engine_->submit_tagged(tag.toStdString(), std::move(c));
}

void EngineBridge::note(const Event& e, bool remote) {
    // While attached, the local engine's model changes are kept for the detach.
    if (remote_ && !remote) {
        if (const auto* m = std::get_if<ModelLoaded>(&e)) {
            local_model_ = *m;
            return;
        }
        if (std::holds_alternative<ModelUnloaded>(e)) {
            local_model_.reset();
            return;
        }
    }
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
        if (remote && err->command == "load_model") detach_after_pump_ = true;
        if (err->command == "load_model") emit model_changed();
    }
}

void EngineBridge::pump() {
    std::vector<Event> batch = engine_->events().drain();
    const size_t local = batch.size();
    if (remote_) {
        std::vector<Event> more = remote_->events().drain();
        batch.insert(batch.end(), std::make_move_iterator(more.begin()),
                     std::make_move_iterator(more.end()));
    }
    if (batch.empty()) return;
    if (writer_)
        for (const Event& e : batch) writer_->record(e);  // copies; snapshots are shared_ptr
    for (size_t i = 0; i < batch.size(); ++i) note(batch[i], i >= local);
    emit events_arrived(batch);
    if (detach_after_pump_) detach();  // the server could not be reached
}

}  // namespace fluoro::ui
