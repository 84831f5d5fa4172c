#include "workbench/serve_controller.h"

#include <QFileInfo>
#include <QMetaObject>
#include <QPointer>

#include "runtime/engine.h"
#include "workbench/engine_bridge.h"

namespace fluoro::ui {

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
    auto relay = std::make_unique<app::EngineRelay>(bridge_.engine());
    auto server = std::make_unique<app::OpenAiServer>(so, relay->backend());
    const std::string host = config.public_host ? "0.0.0.0" : "127.0.0.1";
    try {
        port_ = server->start(host, config.port);
    } catch (const std::exception& e) {
        port_ = 0;
        if (was_running) emit state_changed();
        return QString::fromStdString(e.what());
    }
    relay_ = std::move(relay);
    server_ = std::move(server);
    config_ = config;
    model_path_ = path;
    emit state_changed();
    return {};
}

void ServeController::stop() {
    if (!server_) return;
    relay_->abort();  // a request waiting for this thread's next batch returns now
    server_->stop();
    server_.reset();
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
