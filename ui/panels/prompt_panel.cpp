#include "panels/prompt_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "panels/panel_util.h"

namespace fluoro::ui {

PromptPanel::PromptPanel(QWidget* parent)
    : EventPanel(parent),
      headline_(new QLabel(this)),
      text_(new QTextBrowser(this)),
      table_(new QTableView(this)),
      model_(new PromptTokenModel(this)) {
    headline_->setWordWrap(true);
    headline_->setTextFormat(Qt::PlainText);
    text_->setOpenLinks(false);
    text_->setMinimumHeight(60);
    table_->setModel(model_);
    table_->verticalHeader()->hide();
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setResizeContentsPrecision(64);
    table_->horizontalHeader()->setStretchLastSection(true);
    auto* split = new AdaptiveSplitter(700, this);
    split->addWidget(text_);
    split->addWidget(table_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(headline_);
    layout->addWidget(split, 1);
    refresh();
}

void PromptPanel::consume(const std::vector<Event>& batch) {
    bool changed = false;
    for (const Event& e : batch) changed |= state_.consume(e);
    if (changed) refresh();
}

void PromptPanel::reset() {
    state_.reset();
    refresh();
}

QString PromptPanel::headline() const {
    return headline_->text();
}

QString PromptPanel::prompt_text_html() const {
    return html_;
}

void PromptPanel::refresh() {
    model_->set_state(&state_);
    const size_t n = state_.ids().size();
    if (state_.run() == 0) {
        headline_->setText(
            QStringLiteral("No prompt yet — send a message to see the prompt "
                           "exactly as the model receives it."));
        html_.clear();
        text_->clear();
        return;
    }
    QString how;
    if (state_.raw())
        how = QStringLiteral("plain text (no chat template)");
    else if (state_.template_name() == "jinja")
        how = QStringLiteral("the model's own chat template");
    else if (!state_.template_name().empty())
        how = QStringLiteral("the built-in %1 format — %2")
                  .arg(QString::fromStdString(state_.template_name()),
                       QString::fromStdString(state_.template_note()));
    QString line = QStringLiteral("Run %1 · %2 tokens").arg(state_.run()).arg(n);
    if (!how.isEmpty()) line += QStringLiteral(" · rendered by ") + how;
    line += state_.specials_known()
                ? QStringLiteral(" · special tokens highlighted")
                : QStringLiteral(" · special tokens not recorded for stored runs");
    headline_->setText(line);
    html_ = prompt_html(state_, palette());
    text_->setHtml(html_);
}

}  // namespace fluoro::ui
