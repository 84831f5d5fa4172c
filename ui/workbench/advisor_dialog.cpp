#include "workbench/advisor_dialog.h"

#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "workbench/store_worker.h"

namespace fluoro::ui {

AdvisorDialog::AdvisorDialog(StoreWorker* store, QWidget* parent) : QDialog(parent), store_(store) {
    setObjectName("advisor_dialog");
    setWindowTitle(tr("Prompt cache advisor"));
    resize(900, 640);
    auto* lay = new QVBoxLayout(this);
    auto* row = new QHBoxLayout;
    model_ = new QLineEdit(this);
    model_->setObjectName("advisor_model");
    model_->setPlaceholderText(tr("model (part of its path or name; empty: the latest run's)"));
    last_ = new QSpinBox(this);
    last_->setObjectName("advisor_last");
    last_->setRange(0, 100000);
    last_->setSpecialValueText(tr("all"));
    last_->setPrefix(tr("last "));
    last_->setSuffix(tr(" requests"));
    auto* refresh_button = new QPushButton(tr("Analyse"), this);
    refresh_button->setObjectName("advisor_refresh");
    row->addWidget(model_, 1);
    row->addWidget(last_);
    row->addWidget(refresh_button);
    lay->addLayout(row);
    status_ = new QLabel(this);
    status_->setObjectName("advisor_status");
    lay->addWidget(status_);
    text_ = new QPlainTextEdit(this);
    text_->setObjectName("advisor_report");
    text_->setReadOnly(true);
    text_->setLineWrapMode(QPlainTextEdit::NoWrap);
    text_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    lay->addWidget(text_, 1);

    connect(refresh_button, &QPushButton::clicked, this, &AdvisorDialog::refresh);
    connect(model_, &QLineEdit::returnPressed, this, &AdvisorDialog::refresh);
    if (store_ == nullptr) {
        status_->setText(tr("No session database: nothing was recorded to analyse."));
        refresh_button->setEnabled(false);
        return;
    }
    connect(store_->jobs(), &StoreJobs::advised, this, [this](quint64 job, const QString& r) {
        if (job != job_) return;  // an older request's answer
        status_->setText(
            tr("Replayed through an unbounded prefix cache; the stable-first rate "
               "is an estimate (a token-level rewrite, not re-tokenized)."));
        text_->setPlainText(r);
        emit reported();
    });
    connect(store_->jobs(), &StoreJobs::failed, this, [this](quint64 job, const QString& e) {
        if (job != job_) return;
        status_->setText(tr("Could not analyse: %1").arg(e));
        text_->clear();
        emit reported();
    });
}

void AdvisorDialog::set_model(const QString& model) {
    model_->setText(model);
}

void AdvisorDialog::refresh() {
    if (store_ == nullptr) return;
    status_->setText(tr("Analysing the recorded requests…"));
    job_ = store_->advise(last_->value(), model_->text());
}

QString AdvisorDialog::report() const {
    return text_->toPlainText();
}

QString AdvisorDialog::status() const {
    return status_->text();
}

}  // namespace fluoro::ui
