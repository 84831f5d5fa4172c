#include "workbench/server_panel.h"

#include <QCheckBox>
#include <QDateTime>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include "workbench/serve_controller.h"

namespace fluoro::ui {

namespace {

constexpr int kMaxRows = 1000;  // the newest requests; the store keeps them all

enum Column { Time, Client, Request, Status, Prompt, Cached, Completion, Stop, Ms, Run, NColumns };

}  // namespace

ServerPanel::ServerPanel(ServeController& serve, QWidget* parent) : QWidget(parent), serve_(serve) {
    setObjectName("server_panel");
    auto* v = new QVBoxLayout(this);
    auto* top = new QHBoxLayout();
    toggle_ = new QPushButton(tr("Start server"), this);
    toggle_->setObjectName("serve_toggle");
    toggle_->setCheckable(true);
    status_ = new QLabel(this);
    status_->setObjectName("serve_status");
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    status_->setWordWrap(true);  // an error (a taken port, a missing key) must not widen the dock
    top->addWidget(toggle_);
    top->addWidget(status_, 1);
    v->addLayout(top);

    QSettings st;
    auto* form = new QFormLayout();
    port_ = new QSpinBox(this);
    port_->setObjectName("serve_port");
    port_->setRange(0, 65535);
    port_->setValue(st.value("server/port", 8080).toInt());
    port_->setToolTip(tr("0: any free port"));
    // Short enough for a laptop's left dock column; the address is in the tooltip.
    public_ = new QCheckBox(tr("Reachable from other machines"), this);
    public_->setObjectName("serve_public");
    public_->setToolTip(tr("Listen on 0.0.0.0 instead of 127.0.0.1 only"));
    public_->setChecked(st.value("server/public", false).toBool());
    key_ = new QLineEdit(this);
    key_->setObjectName("serve_key");
    key_->setEchoMode(QLineEdit::PasswordEchoOnEdit);
    key_->setPlaceholderText(tr("none: any local client may call"));
    key_->setToolTip(tr("Clients must send 'Authorization: Bearer KEY'. Not saved."));
    parallel_ = new QSpinBox(this);
    parallel_->setObjectName("serve_parallel");
    parallel_->setRange(1, 16);
    parallel_->setValue(st.value("server/parallel", 1).toInt());
    parallel_->setToolTip(
        tr("1: requests run one at a time on the window's engine, shown live in the chat and "
           "stored. More: that many decode at once (continuous batching) on a second engine of "
           "the same model, drawn in the Scheduler dock and stored, not shown in the chat."));
    form->addRow(tr("Port"), port_);
    form->addRow(tr("Parallel slots"), parallel_);
    form->addRow(QString(), public_);
    form->addRow(tr("API key"), key_);
    form->setRowWrapPolicy(QFormLayout::WrapLongRows);  // a narrow dock puts fields under labels
    v->addLayout(form);

    auto* note = new QLabel(
        tr("Serves the loaded model at /v1/chat/completions and /v1/models. With one slot each "
           "request shows as the live conversation while it runs and is stored like a chat; with "
           "more, the Scheduler dock draws the batch."),
        this);
    note->setWordWrap(true);
    v->addWidget(note);
    totals_ = new QLabel(this);
    totals_->setObjectName("serve_totals");
    totals_->setWordWrap(true);  // the running totals never widen the dock
    v->addWidget(totals_);

    log_ = new QTableWidget(0, NColumns, this);
    log_->setObjectName("serve_log");
    log_->setHorizontalHeaderLabels({tr("Time"), tr("Client"), tr("Request"), tr("Status"),
                                     tr("Prompt"), tr("Cached"), tr("Reply"), tr("Stop"), tr("ms"),
                                     tr("Run")});
    log_->verticalHeader()->hide();
    log_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    log_->setSelectionBehavior(QAbstractItemView::SelectRows);
    log_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    log_->horizontalHeader()->setSectionResizeMode(Request, QHeaderView::Stretch);
    v->addWidget(log_, 1);

    connect(toggle_, &QPushButton::clicked, this, [this](bool on) { set_serving(on); });
    connect(&serve_, &ServeController::state_changed, this, &ServerPanel::on_state_changed);
    connect(&serve_, &ServeController::request_served, this, &ServerPanel::add_request);
    on_state_changed();
}

QString ServerPanel::set_serving(bool on) {
    if (!on) {
        serve_.stop();
        return {};
    }
    ServeConfig c;
    c.port = port_->value();
    c.public_host = public_->isChecked();
    c.api_key = key_->text();
    if (sampling_)
        if (auto s = sampling_()) c.sampling = *s;
    c.parallel = parallel_->value();
    if (model_settings_) c.model = model_settings_();
    const QString err = serve_.start(c);
    if (!err.isEmpty()) {
        on_state_changed();
        status_->setText(tr("Not serving: %1").arg(err));
        return err;
    }
    QSettings st;
    st.setValue("server/port", c.port);
    st.setValue("server/public", c.public_host);
    st.setValue("server/parallel", c.parallel);
    return {};
}

void ServerPanel::set_port(int port) {
    port_->setValue(port);
}

void ServerPanel::set_parallel(int n) {
    parallel_->setValue(n);
}

int ServerPanel::requests_listed() const {
    return log_->rowCount();
}

void ServerPanel::on_state_changed() {
    const bool on = serve_.running();
    toggle_->setChecked(on);
    toggle_->setText(on ? tr("Stop server") : tr("Start server"));
    port_->setEnabled(!on);
    public_->setEnabled(!on);
    key_->setEnabled(!on);
    parallel_->setEnabled(!on);
    status_->setText(
        on ? tr("Serving %1").arg(serve_.url()) +
                 (serve_.schedule() ? tr(" · %1 slots").arg(parallel_->value()) : QString())
           : tr("Stopped"));
    emit serving_changed(on);
}

void ServerPanel::add_request(const app::RequestRecord& r) {
    ++requests_;
    if (r.status >= 400) ++failed_;
    if (r.ran) {
        prompt_ += r.prompt;
        cached_ += r.cached;
        completion_ += r.completion;
    }
    const QString pct = prompt_ > 0
                            ? QString::number(100.0 * double(cached_) / double(prompt_), 'f', 1)
                            : QStringLiteral("–");
    totals_->setText(tr("%1 requests (%2 failed) · %3 of %4 prompt tokens from cache (%5%) · %6 "
                        "completion tokens")
                         .arg(requests_)
                         .arg(failed_)
                         .arg(cached_)
                         .arg(prompt_)
                         .arg(pct)
                         .arg(completion_));

    log_->insertRow(0);
    const auto set = [this](int col, const QString& text, bool number = false) {
        auto* item = new QTableWidgetItem(text);
        if (number) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        log_->setItem(0, col, item);
    };
    set(Time, QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss")));
    set(Client, QString::fromStdString(r.remote));
    // "chat/completions", "models": the /v1/ prefix and the usual method say nothing.
    QString what = QString::fromStdString(r.path);
    if (what.startsWith(QLatin1String("/v1/"))) what = what.mid(4);
    if (r.method != "POST" && r.method != "GET")
        what = QString::fromStdString(r.method) + ' ' + what;
    set(Request, what);
    log_->item(0, Request)->setToolTip(QString::fromStdString(r.method + ' ' + r.path));
    set(Status, QString::number(r.status), true);
    if (r.ran) {
        set(Prompt, QString::number(r.prompt), true);
        set(Cached, QString::number(r.cached), true);
        set(Completion, QString::number(r.completion), true);
        set(Stop, QString::fromStdString(r.stop));
    }
    set(Ms, QString::number(r.ms, 'f', 1), true);
    // The run number the Scheduler dock labels the request's steps with.
    if (r.ran) set(Run, QStringLiteral("#%1").arg(r.run), true);
    while (log_->rowCount() > kMaxRows) log_->removeRow(log_->rowCount() - 1);
}

}  // namespace fluoro::ui
