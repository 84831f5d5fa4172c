#include "panels/lens_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <cmath>

#include "panels/panel_util.h"

namespace fluoro::ui {

LensPanel::LensPanel(QWidget* parent)
    : EventPanel(parent),
      headline_(new QLabel(this)),
      latest_(new QPushButton(tr("Lens of the last token"), this)),
      table_(new QTableWidget(this)) {
    headline_->setWordWrap(true);
    headline_->setTextFormat(Qt::PlainText);
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->setMinimumHeight(60);
    latest_->setToolTip(tr("Compute the logit lens of the latest run's last generated token"));
    connect(latest_, &QPushButton::clicked, this, [this] {
        if (run_ == 0 || last_token_ < 0) return;
        want_run_ = run_;
        want_token_ = last_token_;
        pending_ = true;
        request();
    });
    auto* top = new QHBoxLayout;
    top->addWidget(headline_, 1);
    top->addWidget(latest_, 0, Qt::AlignTop);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    layout->addWidget(table_, 1);
    refresh();
}

void LensPanel::consume(const std::vector<Event>& batch) {
    bool changed = false;
    for (const Event& e : batch) {
        if (const auto* rs = std::get_if<RunStarted>(&e)) {
            run_ = rs->run;
            last_token_ = -1;
            finished_ = false;
            changed = true;
        } else if (const auto* t = std::get_if<TokenEvent>(&e)) {
            if (t->run == run_) last_token_ = std::max(last_token_, t->index);
        } else if (const auto* f = std::get_if<RunFinished>(&e)) {
            if (f->run == run_) finished_ = changed = true;
        } else if (const auto* l = std::get_if<std::shared_ptr<const LogitLensEvent>>(&e)) {
            // Only the answer to the latest request is shown (latest wins, as it is sent).
            if ((*l)->run == want_run_ && (*l)->token == want_token_) {
                lens_ = *l;
                changed = true;
            }
        }
    }
    if (changed) refresh();
}

void LensPanel::reset() {
    run_ = want_run_ = 0;
    want_token_ = last_token_ = -1;
    pending_ = finished_ = false;
    lens_.reset();
    refresh();
}

void LensPanel::select_token(uint64_t run, int64_t index) {
    if (run == 0 || index < 0 || (run == want_run_ && index == want_token_)) return;
    want_run_ = run;
    want_token_ = index;
    lens_.reset();
    pending_ = true;
    if (isVisible() && !visibleRegion().isEmpty()) request();  // on screen
    refresh();
}

void LensPanel::paintEvent(QPaintEvent* event) {
    EventPanel::paintEvent(event);
    if (pending_) QTimer::singleShot(0, this, &LensPanel::request);
}

void LensPanel::request() {
    if (!pending_) return;
    pending_ = false;
    emit request_command(QStringLiteral("lens"),
                         Command(ComputeLogitLens{want_run_, want_token_, kTopK}));
    refresh();
}

QString LensPanel::headline() const {
    if (!lens_) {
        if (want_token_ < 0)
            return tr(
                "Pick a generated token (chat or token inspector) to see the model's "
                "prediction of it after each layer. Only the latest run's tokens have a "
                "lens: it is computed from the conversation's cache.");
        return pending_
                   ? tr("Token %1: the lens is asked for when this dock is shown.").arg(want_token_)
                   : tr("Token %1: computing the lens … (after the running generation, if "
                        "one is running)")
                         .arg(want_token_);
    }
    if (!lens_->error.empty())
        return tr("No lens for token %1: %2")
            .arg(lens_->token)
            .arg(QString::fromStdString(lens_->error));
    const DistTop& out = lens_->layers.back();
    // The first layer from which the token stays the top prediction.
    int64_t from = -1;
    for (int64_t il = int64_t(lens_->layers.size()) - 1;
         il >= 0 && lens_->layers[size_t(il)].target_rank == 0; --il)
        from = il + 1;
    return tr("Token %1 %2, predicted at position %3 after %4: p %5 at the output (rank %6); "
              "%7. %8 layers, %9.")
        .arg(lens_->token)
        .arg(piece_label(lens_->target_piece))
        .arg(lens_->position)
        .arg(piece_label(lens_->input_piece))
        .arg(std::exp(double(out.target_logprob)), 0, 'f', 3)
        .arg(out.target_rank)
        .arg(from > 0 ? tr("the top prediction from layer %1 on").arg(from)
                      : tr("never the top prediction"))
        .arg(lens_->layers.size())
        .arg(format_ms(lens_->ms));
}

void LensPanel::refresh() {
    headline_->setText(headline());
    latest_->setEnabled(run_ != 0 && last_token_ >= 0 && finished_);
    table_->clear();
    const bool show = lens_ && lens_->error.empty() && !lens_->layers.empty();
    table_->setVisible(show);
    if (!show) {
        table_->setRowCount(0);
        table_->setColumnCount(0);
        return;
    }
    const size_t nl = lens_->layers.size(), k = lens_->layers.back().top.size();
    table_->setColumnCount(int(4 + k));
    QStringList headers{tr("Layer"), tr("Token rank"), tr("Token p"), tr("Entropy")};
    for (size_t j = 0; j < k; ++j) headers << tr("#%1").arg(j + 1);
    table_->setHorizontalHeaderLabels(headers);
    table_->setRowCount(int(nl));
    const auto cell = [](const QString& text, double p) {
        auto* item = new QTableWidgetItem(text);
        const QColor bg = heat_color(std::clamp(p, 0.0, 1.0));
        item->setBackground(bg);
        item->setForeground(text_on(bg));
        return item;
    };
    // The output first: read from the prediction down to the embedding.
    for (size_t r = 0; r < nl; ++r) {
        const size_t il = nl - 1 - r;
        const DistTop& d = lens_->layers[il];
        const double tp = std::exp(double(d.target_logprob));
        table_->setItem(int(r), 0, new QTableWidgetItem(QString::number(il + 1)));
        table_->setItem(int(r), 1, new QTableWidgetItem(QString::number(d.target_rank)));
        table_->setItem(int(r), 2, cell(QString::number(tp, 'f', 3), tp));
        table_->setItem(int(r), 3, new QTableWidgetItem(QString::number(d.entropy, 'f', 2)));
        for (size_t j = 0; j < d.top.size() && j < k; ++j) {
            const double p = std::exp(double(d.top[j].logprob));
            const QString text =
                piece_label(lens_->pieces[il][j]) + QStringLiteral(" %1").arg(p, 0, 'f', 2);
            QTableWidgetItem* item = cell(text, p);
            if (d.top[j].id == lens_->target) {
                QFont f = item->font();
                f.setBold(true);
                item->setFont(f);
            }
            item->setToolTip(tr("layer %1, rank %2: token %3 (id %4), p %5")
                                 .arg(il + 1)
                                 .arg(j + 1)
                                 .arg(piece_label(lens_->pieces[il][j]))
                                 .arg(d.top[j].id)
                                 .arg(p, 0, 'g', 4));
            table_->setItem(int(r), int(4 + j), item);
        }
    }
}

}  // namespace fluoro::ui
