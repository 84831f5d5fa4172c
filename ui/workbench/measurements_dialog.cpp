#include "workbench/measurements_dialog.h"

#include <QChartView>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include "workbench/measure_chart.h"
#include "workbench/measure_form.h"
#include "workbench/measure_runner.h"

namespace fluoro::ui {

namespace {

QString qs(std::string_view s) {
    return QString::fromUtf8(s.data(), qsizetype(s.size()));
}

QString kind_title(const std::string& kind) {
    const auto k = app::parse_measure_kind(kind);
    return k ? qs(app::measure_kind_title(*k)) : QString::fromStdString(kind);
}

}  // namespace

MeasurementsDialog::MeasurementsDialog(StoreWorker* store, QWidget* parent)
    : QDialog(parent), store_(store), runner_(new MeasureRunner(this)) {
    setWindowTitle(tr("Measurements"));
    setObjectName("measurements_dialog");
    auto* layout = new QVBoxLayout(this);

    auto* top = new QHBoxLayout;
    for (const app::MeasureKind k : app::kMeasureKinds) {
        auto* b = new QPushButton(qs(app::measure_kind_title(k)) + tr("…"), this);
        b->setObjectName(QString("measure_new_") + qs(app::measure_kind_name(k)));
        connect(b, &QPushButton::clicked, this, [this, k] { ask(k); });
        top->addWidget(b);
        new_buttons_.push_back(b);
    }
    top->addStretch(1);
    model_label_ = new QLabel(this);
    model_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    top->addWidget(model_label_);
    layout->addLayout(top);

    auto* run_row = new QHBoxLayout;
    progress_ = new QProgressBar(this);
    progress_->setRange(0, 1000);
    progress_->setMaximumWidth(220);
    status_ = new QLabel(this);
    status_->setObjectName("measure_status");
    status_->setWordWrap(true);
    cancel_ = new QPushButton(tr("Cancel"), this);
    connect(cancel_, &QPushButton::clicked, this, [this] {
        runner_->cancel();
        status_->setText(tr("Cancelling… (at the next step)"));
    });
    run_row->addWidget(progress_);
    run_row->addWidget(status_, 1);
    run_row->addWidget(cancel_);
    layout->addLayout(run_row);

    auto* split = new QSplitter(Qt::Horizontal, this);
    auto* left = new QWidget(split);
    auto* left_layout = new QVBoxLayout(left);
    left_layout->setContentsMargins(0, 0, 0, 0);
    list_ = new QListWidget(left);
    list_->setObjectName("measure_list");
    list_->setWordWrap(true);
    left_layout->addWidget(list_, 1);
    auto* buttons = new QHBoxLayout;
    delete_ = new QPushButton(tr("Delete"), left);
    export_ = new QPushButton(tr("Export JSON…"), left);
    buttons->addWidget(delete_);
    buttons->addWidget(export_);
    left_layout->addLayout(buttons);
    split->addWidget(left);

    auto* right = new QWidget(split);
    auto* right_layout = new QVBoxLayout(right);
    right_layout->setContentsMargins(0, 0, 0, 0);
    headline_ = new QLabel(tr("No measurement yet: pick one above."), right);
    headline_->setObjectName("measure_headline");
    headline_->setWordWrap(true);
    headline_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    right_layout->addWidget(headline_);
    tabs_ = new QTabWidget(right);
    table_ = new QTableWidget(right);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->verticalHeader()->setVisible(false);
    json_ = new QPlainTextEdit(right);
    json_->setReadOnly(true);
    // Pages of tabs_ once a result is shown; until then hidden (else they sit at the pane's
    // corner over the headline).
    table_->hide();
    json_->hide();
    right_layout->addWidget(tabs_, 1);
    split->addWidget(right);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 3);
    layout->addWidget(split, 1);

    connect(list_, &QListWidget::currentRowChanged, this, &MeasurementsDialog::show_row);
    connect(delete_, &QPushButton::clicked, this, [this] {
        const int row = list_->currentRow();
        if (row < 0 || row >= int(records_.size())) return;
        if (store_) {
            job_ = store_->delete_measurement(records_[size_t(row)].id);
        } else {
            records_.erase(records_.begin() + row);
            fill_list(std::min(row, int(records_.size()) - 1));
        }
    });
    connect(export_, &QPushButton::clicked, this, [this] {
        const app::MeasurementRecord* r = shown_record();
        if (!r) return;
        const QString path = QFileDialog::getSaveFileName(this, tr("Export measurement"),
                                                          QString::fromStdString(r->kind) + ".json",
                                                          tr("JSON (*.json)"));
        if (!path.isEmpty() && !export_shown(path))
            status_->setText(tr("Could not write %1.").arg(path));
    });
    connect(runner_, &MeasureRunner::progress, this, [this](const QString& what, double f) {
        status_->setText(what);
        if (f < 0) {
            progress_->setRange(0, 0);  // busy
        } else {
            progress_->setRange(0, 1000);
            progress_->setValue(int(f * 1000));
        }
    });
    connect(runner_, &MeasureRunner::finished, this, &MeasurementsDialog::on_finished);
    connect(runner_, &MeasureRunner::failed, this, &MeasurementsDialog::on_failed);
    if (store_) {
        connect(store_->jobs(), &StoreJobs::measurements, this,
                &MeasurementsDialog::on_measurements);
        connect(store_->jobs(), &StoreJobs::failed, this, [this](quint64 job, const QString& m) {
            if (job == job_) status_->setText(tr("Session store: %1").arg(m));
        });
    }
    set_running(false);
    set_model({});
    if (const QScreen* s = screen()) {
        const QRect avail = s->availableGeometry();
        resize(std::min(1000, avail.width() - 40), std::min(660, avail.height() - 60));
    }
    refresh();
}

MeasurementsDialog::~MeasurementsDialog() = default;

void MeasurementsDialog::set_model(const QString& path) {
    model_ = path;
    model_label_->setText(path.isEmpty() ? tr("No model loaded")
                                         : tr("on %1").arg(QFileInfo(path).fileName()));
    model_label_->setToolTip(path);
    for (QPushButton* b : new_buttons_) b->setEnabled(!path.isEmpty() && !runner_->running());
}

void MeasurementsDialog::refresh() {
    if (store_)
        job_ = store_->list_measurements();
    else
        fill_list(records_.empty() ? -1 : 0);
}

void MeasurementsDialog::ask(app::MeasureKind kind) {
    if (model_.isEmpty()) {
        status_->setText(tr("Open a model first (File → Open model)."));
        return;
    }
    MeasureForm form(kind, QFileInfo(model_).fileName(), last_[kind], this);
    if (form.exec() == QDialog::Accepted) start(kind, form.values());
}

bool MeasurementsDialog::start(app::MeasureKind kind, const app::MeasureValues& values) {
    if (model_.isEmpty()) {
        status_->setText(tr("Open a model first (File → Open model)."));
        return false;
    }
    last_[kind] = values;
    if (!runner_->start({kind, model_.toStdString(), values})) {
        status_->setText(tr("A measurement is running; wait for it or cancel it."));
        return false;
    }
    set_running(true);
    status_->setText(tr("%1: starting…").arg(qs(app::measure_kind_title(kind))));
    return true;
}

void MeasurementsDialog::set_running(bool running) {
    progress_->setVisible(running);
    cancel_->setVisible(running);
    progress_->setRange(0, 1000);
    progress_->setValue(0);
    for (QPushButton* b : new_buttons_) b->setEnabled(!running && !model_.isEmpty());
}

void MeasurementsDialog::on_finished(const QString& json, double seconds) {
    set_running(false);
    app::MeasurementRecord r;
    try {
        const nlohmann::json j = nlohmann::json::parse(json.toStdString());
        r.kind = j.at("kind").get<std::string>();
        r.model_path = j.at("model").get<std::string>();
        r.params_json = j.at("params").dump();
        r.result_json = json.toStdString();
        r.seconds = seconds;
        r.headline = app::measure_view(j).headline;
    } catch (const std::exception& e) {
        on_failed(tr("the result could not be read: %1").arg(e.what()), false);
        return;
    }
    status_->setText(tr("Done in %1 s.").arg(seconds, 0, 'f', 1));
    if (store_) {
        select_newest_ = true;
        job_ = store_->add_measurement(r);
    } else {
        r.id = -int64_t(records_.size()) - 1;
        records_.insert(records_.begin(), r);
        fill_list(0);
        emit measured();
    }
    emit ended();
}

void MeasurementsDialog::on_failed(const QString& message, bool cancelled) {
    set_running(false);
    status_->setText(cancelled ? message : tr("Failed: %1").arg(message));
    emit ended();
}

void MeasurementsDialog::on_measurements(quint64 job, const MeasurementList& list) {
    if (job != job_) return;
    const bool fresh = select_newest_;
    select_newest_ = false;
    const int keep = list_->currentRow();
    records_ = list;
    fill_list(fresh || keep < 0 ? 0 : std::min(keep, int(records_.size()) - 1));
    emit listed();
    if (fresh) emit measured();
}

void MeasurementsDialog::fill_list(int select_row) {
    const QSignalBlocker block(list_);
    list_->clear();
    for (const app::MeasurementRecord& r : records_) {
        const QString when = QString::fromStdString(r.created_at).left(16).replace('T', ' ');
        auto* item = new QListWidgetItem(
            tr("%1 · %2 · %3\n%4")
                .arg(kind_title(r.kind), QFileInfo(QString::fromStdString(r.model_path)).fileName(),
                     when.isEmpty() ? tr("this session") : when,
                     QString::fromStdString(r.headline)),
            list_);
        item->setToolTip(QString::fromStdString(r.model_path));
    }
    if (records_.empty()) {
        show_row(-1);
        return;
    }
    list_->setCurrentRow(std::clamp(select_row, 0, int(records_.size()) - 1));
    show_row(list_->currentRow());
}

const app::MeasurementRecord* MeasurementsDialog::shown_record() const {
    const int row = list_->currentRow();
    return row >= 0 && row < int(records_.size()) ? &records_[size_t(row)] : nullptr;
}

void MeasurementsDialog::show_row(int row) {
    while (tabs_->count() > 0) {
        QWidget* w = tabs_->widget(0);
        tabs_->removeTab(0);
        if (w != table_ && w != json_) w->deleteLater();
    }
    view_.reset();
    delete_->setEnabled(row >= 0);
    export_->setEnabled(row >= 0);
    if (row < 0 || row >= int(records_.size())) {
        headline_->setText(store_ ? tr("No measurement yet: pick one above.")
                                  : tr("No measurement yet: pick one above. (No session store: "
                                       "results are kept until the window closes.)"));
        return;
    }
    const app::MeasurementRecord& r = records_[size_t(row)];
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(r.result_json);
        view_ = app::measure_view(j);
    } catch (const std::exception& e) {
        headline_->setText(tr("This stored result cannot be shown: %1").arg(e.what()));
        return;
    }
    QString head = QStringLiteral("<b>%1</b> — %2<br><small>%3 · %4 threads · %5 s</small>")
                       .arg(kind_title(r.kind).toHtmlEscaped(),
                            QString::fromStdString(view_->headline).toHtmlEscaped(),
                            QString::fromStdString(r.model_path).toHtmlEscaped())
                       .arg(j.value("threads", 0))
                       .arg(r.seconds, 0, 'f', 1);
    for (const std::string& n : view_->notes)
        head += "<br><small>" + QString::fromStdString(n).toHtmlEscaped() + "</small>";
    headline_->setText(head);
    for (const app::MeasurePlot& p : view_->plots) {
        QChartView* chart = make_measure_chart(p, tabs_);
        chart->setObjectName("measure_chart");
        tabs_->addTab(chart, QString::fromStdString(p.title));
    }
    const app::MeasureTable& t = view_->table;
    table_->clear();
    table_->setColumnCount(int(t.header.size()));
    table_->setRowCount(int(t.rows.size()));
    QStringList header;
    for (const std::string& h : t.header) header << QString::fromStdString(h);
    table_->setHorizontalHeaderLabels(header);
    for (size_t i = 0; i < t.rows.size(); ++i)
        for (size_t c = 0; c < t.rows[i].size() && c < t.header.size(); ++c)
            table_->setItem(int(i), int(c),
                            new QTableWidgetItem(QString::fromStdString(t.rows[i][c])));
    table_->resizeColumnsToContents();
    tabs_->addTab(table_, tr("Table"));
    json_->setPlainText(
        QString::fromStdString(j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)));
    tabs_->addTab(json_, tr("JSON"));
}

QString MeasurementsDialog::headline_text() const {
    return headline_->text();
}

QString MeasurementsDialog::status_text() const {
    return status_->text();
}

bool MeasurementsDialog::export_shown(const QString& path) {
    const app::MeasurementRecord* r = shown_record();
    if (!r) return false;
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
    QByteArray bytes;
    try {
        bytes = QByteArray::fromStdString(
            nlohmann::json::parse(r->result_json)
                .dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
            "\n");
    } catch (const std::exception&) {
        bytes = QByteArray::fromStdString(r->result_json);  // as stored, when it is not JSON
    }
    return f.write(bytes) == bytes.size();
}

}  // namespace fluoro::ui
