#include "workbench/serve_controller.h"

#include <QFileInfo>
#include <QMetaObject>
#include <QPointer>

#include "runtime/engine.h"
#include "session/backend_factory.h"
#include "store/event_ids.h"
#include "store/store_writer.h"
#include "workbench/engine_bridge.h"

namespace fluoro::ui {
namespace {
// The batch engine's run and conversation numbers in the store, apart from the window engine's
// (and from a remote server's, app::RemoteEngine::kIdBase).
constexpr uint64_t kBatchIdBase = uint64_t(1) << 41;
}  // namespace

ServeController::ServeController(EngineBridge& bridge, QObject* parent)
    : QObject(parent), bridge_(bridge) {
    connect(&bridge_, &EngineBridge::events_arrived, this, [this](const std::vector<Event>& batch) {
        if (relay_) relay_->deliver(batch);
    });
    connect(&bridge_, &EngineBridge::model_changed, this, &ServeController::on_model_changed);
}

ServeController::~ServeController() {
    blockSignals(true);  // the window being destroyed must not hear of it
    stop();
}

QString ServeController::start(const ServeConfig& config) {
    if (bridge_.attached())
        return tr(
            "the window is attached to a remote server: the API server serves a local "
            "model (open one first)");
    if (!bridge_.model()) return tr("load a model first: the server serves the loaded model");
    const bool was_running = running();
    if (was_running) stop();
    const QString path = QString::fromStdString(bridge_.model()->path);
    // The CLI's rule (server/access.h check_bind, without its --insecure-public way out): on every
    // interface, anyone who reaches the port could use the engine unless a key is asked for.
    if (config.public_host && config.api_key.trimmed().isEmpty()) {
        if (was_running) emit state_changed();
        return tr(
            "listening on 0.0.0.0 needs an API key: anyone on the network could use the "
            "engine; enter a key, or serve this machine only");
    }

    app::ServerOptions so;
    so.model_id = QFileInfo(path).fileName().toStdString();
    so.model_info = *bridge_.model();
    so.api_key = config.api_key.toStdString();
    so.max_queue = config.max_queue;
    so.sampling = config.sampling;
    so.log = false;
    // On a server thread: hop to the GUI thread. The controller may be gone by then.
    QPointer<ServeController> self(this);
    so.on_request = [self](const app::RequestRecord& r) {
        if (!self) return;
        QMetaObject::invokeMethod(
            self.data(),
            [self, r] {
                if (self) emit self->request_served(r);
            },
            Qt::QueuedConnection);
    };
    std::unique_ptr<app::EngineRelay> relay;
    std::unique_ptr<BatchEngine> batch;
    std::shared_ptr<app::BatchSchedule> schedule;
    app::CompletionBackend backend;
    if (config.parallel > 1) {
        // The same file and settings as the window's engine, in a batching engine of its own.
        BatchEngineOptions bo;
        bo.parallel = config.parallel;
        bo.sampling = config.sampling;
        bo.backend_factory = app::make_backend;
        try {
            batch = std::make_unique<BatchEngine>(path.toStdString(), config.model, bo);
        } catch (const std::exception& e) {
            if (was_running) emit state_changed();
            return QString::fromStdString(e.what());
        }
        schedule = std::make_shared<app::BatchSchedule>(config.parallel);
        batch->set_step_observer(
            [s = schedule](const BatchStep& st, const BatchLoad& l) { s->step(st, l); });
        // Recorded like the window's runs, numbered apart from them.
        std::function<void(const Event&)> record;
        if (app::StoreWriter* writer = bridge_.writer())
            record = [writer](const Event& e) {
                writer->record(app::with_id_base(e, kBatchIdBase));
            };
        backend = app::batch_backend(*batch, std::move(record));
        so.model_info = batch->model();
    } else {
        relay = std::make_unique<app::EngineRelay>(bridge_.engine());
        backend = relay->backend();
    }
    auto server = std::make_unique<app::OpenAiServer>(so, backend);
    const std::string host = config.public_host ? "0.0.0.0" : "127.0.0.1";
    try {
        port_ = server->start(host, config.port);
    } catch (const std::exception& e) {
        port_ = 0;
        if (was_running) emit state_changed();
        return QString::fromStdString(e.what());
    }
    relay_ = std::move(relay);
    batch_ = std::move(batch);
    schedule_ = std::move(schedule);
    server_ = std::move(server);
    config_ = config;
    model_path_ = path;
    emit state_changed();
    return {};
}

void ServeController::stop() {
    if (!server_) return;
    if (relay_) relay_->abort();  // a request waiting for this thread's next batch returns now
    server_->stop();
    server_.reset();
    batch_.reset();  // after the server: no request is left in it
    schedule_.reset();
    relay_.reset();
    port_ = 0;
    emit state_changed();
}

QString ServeController::url() const {
    if (!server_) return {};
    const QString host =
        config_.public_host ? QStringLiteral("0.0.0.0") : QStringLiteral("127.0.0.1");
    return QStringLiteral("http://%1:%2/v1").arg(host).arg(port_);
}

void ServeController::on_model_changed() {
    if (!server_) return;
    const auto& m = bridge_.model();
    if (!m || QString::fromStdString(m->path) == model_path_) return;
    // Another model: serve it under its own name, on the same port.
    ServeConfig c = config_;
    c.port = port_;
    start(c);
}

}  // namespace fluoro::ui
