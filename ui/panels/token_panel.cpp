#include "panels/token_panel.h"

#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPainter>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

namespace fluoro::ui {

AlternativeBars::AlternativeBars(const TokenAlternativesModel* model, QWidget* parent)
    : QWidget(parent), model_(model) {
    connect(model_, &QAbstractItemModel::modelReset, this, [this] {
        updateGeometry();
        update();
    });
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

QSize AlternativeBars::sizeHint() const {
    return {320, std::max(1, model_->rowCount()) * (fontMetrics().height() + 6) + 8};
}

void AlternativeBars::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Base));
    const QFontMetrics fm(font());
    const int rh = fm.height() + 6;
    const int label_w = std::min(width() / 3, fm.horizontalAdvance(QStringLiteral("MMMMMMMMMMMM")));
    const int value_w = fm.horizontalAdvance(QStringLiteral("0.0000")) + 8;
    const int bar_x = label_w + 12;
    const int bar_w = std::max(10, width() - bar_x - value_w - 6);
    for (int r = 0; r < model_->rowCount(); ++r) {
        const QString label = model_->index(r, TokenAlternativesModel::Token).data().toString();
        const double prob =
            model_->index(r, TokenAlternativesModel::Probability).data(Qt::UserRole).toDouble();
        const bool chosen =
            model_->index(r, TokenAlternativesModel::Chosen).data(Qt::UserRole).toBool();
        const int y = 4 + r * rh;
        p.setPen(pal.color(QPalette::Text));
        QFont f = font();
        f.setBold(chosen);
        p.setFont(f);
        p.drawText(QRect(4, y, label_w, rh), Qt::AlignRight | Qt::AlignVCenter,
                   fm.elidedText(label, Qt::ElideRight, label_w));
        p.setFont(font());
        p.fillRect(QRect(bar_x, y + 3, bar_w, rh - 6), pal.color(QPalette::AlternateBase));
        p.fillRect(QRect(bar_x, y + 3, int(std::clamp(prob, 0.0, 1.0) * bar_w), rh - 6),
                   chosen ? pal.color(QPalette::Highlight) : category_color(0));
        p.setPen(pal.color(QPalette::Text));
        p.drawText(QRect(bar_x + bar_w + 6, y, value_w, rh), Qt::AlignLeft | Qt::AlignVCenter,
                   QString::number(prob, 'f', 4));
    }
}

namespace {
const QString kLocalNote = QStringLiteral(
    "Probabilities are the model's distribution after repetition penalties and temperature, "
    "before top-k / top-p / min-p truncation; the token itself was drawn from the truncated, "
    "renormalized set, whose probabilities the engine does not report.");
const QString kRemoteNote = QStringLiteral(
    "A remote server's run: probabilities and alternatives are its logprobs and top_logprobs as "
    "it sent them (what they are taken after depends on the server); ids number the texts it "
    "sent, not its vocabulary.");
}  // namespace

TokenPanel::TokenPanel(QWidget* parent)
    : EventPanel(parent),
      view_(new QTableView(this)),
      list_(new TokenListModel(this)),
      alternatives_(new TokenAlternativesModel(this)),
      detail_(new QLabel(this)),
      bars_(new AlternativeBars(alternatives_, this)),
      note_(new QLabel(this)) {
    view_->setModel(list_);
    view_->verticalHeader()->hide();
    view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    view_->setSelectionMode(QAbstractItemView::SingleSelection);
    view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    // Fit columns to the rows on screen and 64 more, not to up to 1000 rows on every insert (a
    // replayed run arrives as one large batch).
    view_->horizontalHeader()->setResizeContentsPrecision(64);
    view_->horizontalHeader()->setStretchLastSection(true);
    detail_->setWordWrap(true);
    detail_->setTextFormat(Qt::PlainText);
    note_->setWordWrap(true);
    note_->setForegroundRole(QPalette::PlaceholderText);
    note_->setText(kLocalNote);

    auto* right = new QWidget(this);
    auto* rl = new QVBoxLayout(right);
    rl->setContentsMargins(4, 0, 0, 0);
    rl->addWidget(detail_);
    rl->addWidget(bars_);
    rl->addWidget(note_);
    rl->addStretch(1);
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(view_);
    split->addWidget(right);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(split);

    connect(view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) {
                if (!current.isValid()) return;
                show_row(current.row());
                if (!programmatic_ && selected_ >= 0) emit token_selected(state_.run(), selected_);
            });
    refresh();
}

void TokenPanel::consume(const std::vector<Event>& batch) {
    bool changed = false;
    for (const Event& e : batch) {
        if (std::holds_alternative<RunStarted>(e)) selected_ = pending_ = -1;
        changed |= state_.consume(e);
    }
    if (changed) refresh();
}

void TokenPanel::reset() {
    state_.reset();
    selected_ = pending_ = -1;
    refresh();
}

void TokenPanel::select_token(uint64_t run, int64_t index) {
    if (run != state_.run()) return;
    const int row = state_.row_of(index);
    if (row < 0) {
        pending_ = index;  // shown when it arrives
        return;
    }
    pending_ = -1;
    programmatic_ = true;
    view_->selectRow(row);
    view_->scrollTo(list_->index(row, 0));
    programmatic_ = false;
    show_row(row);
}

QString TokenPanel::detail() const {
    return detail_->text();
}

void TokenPanel::show_row(int row) {
    note_->setText(state_.remote() ? kRemoteNote : kLocalNote);
    if (row < 0 || size_t(row) >= state_.tokens().size()) {
        selected_ = -1;
        alternatives_->set_token(nullptr, nullptr);
        detail_->setText(state_.tokens().empty()
                             ? QStringLiteral("No tokens generated in this run yet.")
                             : QStringLiteral("Pick a token to see its alternatives."));
        return;
    }
    const TokenEvent& t = state_.tokens()[size_t(row)];
    selected_ = t.index;
    alternatives_->set_token(&t, &state_.vocab());
    if (t.id < 0) {
        detail_->setText(QStringLiteral("#%1 “%2”: no probabilities (text flushed at the "
                                        "end of the run that no token released, or a remote "
                                        "server's text sent without logprobs).")
                             .arg(t.index)
                             .arg(piece_label(t.piece, 40)));
    } else if (t.top.empty()) {
        detail_->setText(
            QStringLiteral("#%1 “%2” (id %3) · p = %4 · no alternatives recorded (telemetry "
                           "level Off)")
                .arg(t.index)
                .arg(piece_label(t.piece, 40))
                .arg(t.id)
                .arg(std::exp(double(t.logprob)), 0, 'f', 4));
    } else {
        const auto it = std::find_if(t.top.begin(), t.top.end(),
                                     [&](const TokenProb& tp) { return tp.id == t.id; });
        const QString rank = it == t.top.end()
                                 ? QStringLiteral("outside the top %1").arg(t.top.size())
                                 : QStringLiteral("rank %1 of the top %2")
                                       .arg(int(it - t.top.begin()) + 1)
                                       .arg(t.top.size());
        detail_->setText(QStringLiteral("#%1 “%2” (id %3) · p = %4 · log p = %5 · %6:")
                             .arg(t.index)
                             .arg(piece_label(t.piece, 40))
                             .arg(t.id)
                             .arg(std::exp(double(t.logprob)), 0, 'f', 4)
                             .arg(double(t.logprob), 0, 'f', 3)
                             .arg(rank));
    }
}

void TokenPanel::refresh() {
    list_->set_state(&state_);
    if (pending_ >= 0 && state_.row_of(pending_) >= 0) {
        select_token(state_.run(), pending_);
        return;
    }
    show_row(selected_ >= 0 ? state_.row_of(selected_) : -1);
}

}  // namespace fluoro::ui
