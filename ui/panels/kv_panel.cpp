#include "panels/kv_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QProgressBar>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "panels/kv_eviction_strip.h"
#include "panels/line_chart.h"
#include "panels/panel_util.h"

namespace fluoro::ui {

KvGrid::KvGrid(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void KvGrid::set_snapshot(std::shared_ptr<const KvSnapshot> snapshot) {
    snapshot_ = std::move(snapshot);
    update();
}

int KvGrid::legend_height() const {
    return fontMetrics().height() + 8;
}

int KvGrid::cell_size() const {
    // The largest square cell (4..18 px) that fits every block.
    const int n = snapshot_ ? int(snapshot_->blocks.size()) : 0;
    if (n == 0) return 18;
    const double area = double(width() - 4) * double(height() - legend_height() - 4);
    return std::clamp(int(std::floor(std::sqrt(area / n))), 4, 26);
}

int KvGrid::columns() const {
    return std::max(1, (width() - 4) / cell_size());
}

int KvGrid::block_at(QPoint pos) const {
    if (!snapshot_) return -1;
    const int cs = cell_size();
    const int x = pos.x() - 2, y = pos.y() - legend_height();
    if (x < 0 || y < 0) return -1;
    const int col = x / cs, row = y / cs;
    if (col >= columns()) return -1;
    const int i = row * columns() + col;
    return i < int(snapshot_->blocks.size()) ? i : -1;
}

QString KvGrid::tooltip_at(QPoint pos) const {
    const int i = block_at(pos);
    if (i < 0) return {};
    const KvBlock& b = snapshot_->blocks[size_t(i)];
    QString text = QStringLiteral("block %1 · %2").arg(i).arg(kv_state_label(b.state));
    if (b.owner >= 0) text += QStringLiteral(" · seq %1").arg(b.owner);
    text += QStringLiteral("\n%1 / %2 tokens").arg(b.tokens).arg(snapshot_->block_tokens);
    return text;
}

void KvGrid::mouseMoveEvent(QMouseEvent* event) {
    const QString text = tooltip_at(event->position().toPoint());
    if (text.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(event->globalPosition().toPoint(), text, this);
}

void KvGrid::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Base));
    if (!snapshot_) return;
    // Legend with counts per state.
    std::array<int, kKvStates> counts{};
    for (const KvBlock& b : snapshot_->blocks)
        if (size_t(b.state) < kKvStates) ++counts[size_t(b.state)];
    const QFontMetrics fm(font());
    int x = 4;
    for (size_t s = 0; s < kKvStates; ++s) {
        const QString label =
            QStringLiteral("%1 %2").arg(kv_state_label(KvBlockState(s))).arg(counts[s]);
        p.fillRect(QRect(x, 4, 11, 11), kv_state_color(KvBlockState(s), pal));
        p.setPen(pal.color(QPalette::Text));
        p.drawText(QPoint(x + 15, 4 + fm.ascent() - 1), label);
        x += 15 + fm.horizontalAdvance(label) + 12;
    }
    const int cs = cell_size(), cols = columns(), top = legend_height();
    const int gap = cs >= 8 ? 1 : 0;
    for (size_t i = 0; i < snapshot_->blocks.size(); ++i) {
        const KvBlock& b = snapshot_->blocks[i];
        const QRect r(2 + int(i % size_t(cols)) * cs, top + int(i / size_t(cols)) * cs, cs - gap,
                      cs - gap);
        QColor c = kv_state_color(b.state, pal);
        p.fillRect(r, c);
        // A partly filled block shows its fill as a lighter top part.
        if (b.state != KvBlockState::Free && snapshot_->block_tokens > 0 &&
            b.tokens < snapshot_->block_tokens) {
            const int empty_h =
                r.height() * (snapshot_->block_tokens - b.tokens) / snapshot_->block_tokens;
            QColor faded = c;
            faded.setAlpha(90);
            p.fillRect(QRect(r.left(), r.top(), r.width(), empty_h), pal.color(QPalette::Base));
            p.fillRect(QRect(r.left(), r.top(), r.width(), empty_h), faded);
        }
    }
}

KvPanel::KvPanel(QWidget* parent)
    : EventPanel(parent),
      stack_(new QStackedWidget(this)),
      notice_(
          make_notice(QStringLiteral("No KV cache snapshot yet — the engine sends the block pool "
                                     "with every step of a run."),
                      this)),
      grid_(new KvGrid(this)),
      summary_(new QLabel(this)),
      evictions_(new QLabel(this)),
      strip_(new KvEvictionStrip(this)),
      budget_(new QProgressBar(this)),
      table_(new QTableView(this)),
      model_(new KvBlockTableModel(this)),
      chart_(new LineChart(QStringLiteral("KV bytes over the run"), QStringLiteral("s"),
                           QStringLiteral("MiB"), this)) {
    budget_->setRange(0, 1000);
    budget_->setTextVisible(true);
    stack_->addWidget(notice_);
    stack_->addWidget(grid_);
    table_->setModel(model_);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setAlternatingRowColors(true);
    used_series_ = chart_->add_series(QStringLiteral("used"), category_color(0));

    auto* lower = new AdaptiveSplitter(720, this);
    lower->addWidget(table_);
    lower->addWidget(chart_);
    lower->setStretchFactor(0, 3);
    lower->setStretchFactor(1, 2);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(stack_);
    split->addWidget(lower);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(budget_);
    layout->addWidget(summary_);
    layout->addWidget(evictions_);
    layout->addWidget(strip_);
    layout->addWidget(split, 1);
    evictions_->setWordWrap(true);
    summary_->setWordWrap(true);  // never wider than the dock
    strip_->set_state(&state_);
    refresh();
}

void KvPanel::consume(const std::vector<Event>& batch) {
    bool changed = false;
    for (const Event& e : batch) changed |= state_.consume(e);
    if (changed) refresh();
}

void KvPanel::reset() {
    state_.reset();
    refresh();
}

QString KvPanel::notice() const {
    return stack_->currentWidget() == notice_ ? notice_->text() : QString();
}

QString KvPanel::budget_text() const {
    return budget_->format();
}

QString KvPanel::summary() const {
    return summary_->text();
}

QString KvPanel::eviction_text() const {
    return evictions_->isHidden() ? QString() : evictions_->text();
}

void KvPanel::refresh_evictions() {
    const KvEviction* e = state_.last_eviction();
    evictions_->setVisible(e != nullptr);
    strip_->setVisible(e != nullptr);
    strip_->update();
    if (!e) return;
    const KvEvictionCounts n = eviction_counts(*e);
    QString text = QStringLiteral(
                       "KV policy %1 · budget %2 tokens · %3 this run · latest at step %4: "
                       "kept %5 (%6 sinks, %7 heavy, %8 recent), evicted %9 in %10 ms")
                       .arg(QString::fromStdString(e->policy))
                       .arg(e->budget)
                       .arg(state_.evictions().size() == 1
                                ? QStringLiteral("1 eviction")
                                : QStringLiteral("%1 evictions").arg(state_.evictions().size()))
                       .arg(e->step)
                       .arg(n.kept())
                       .arg(n.sinks)
                       .arg(n.heavy)
                       .arg(n.recent)
                       .arg(n.evicted)
                       .arg(e->ms, 0, 'f', 2);
    text += QStringLiteral(" · %1 of %2 positions no longer cached")
                .arg(state_.evicted_positions())
                .arg(state_.positions());
    if (state_.bytes_saved() > 0)
        text += QStringLiteral(" = %1 saved").arg(format_bytes(state_.bytes_saved()));
    evictions_->setText(text);
}

void KvPanel::refresh() {
    refresh_evictions();
    const auto snap = state_.snapshot();
    grid_->set_snapshot(snap);
    model_->set_snapshot(snap.get());
    stack_->setCurrentWidget(snap ? static_cast<QWidget*>(grid_) : notice_);
    if (snap) {
        const auto counts = state_.state_counts();
        const int64_t n = int64_t(snap->blocks.size());
        summary_->setText(
            QStringLiteral("step %1 · %2 blocks of %3 tokens · %4 free · %5 per token")
                .arg(snap->step)
                .arg(n)
                .arg(snap->block_tokens)
                .arg(counts[size_t(KvBlockState::Free)])
                .arg(format_bytes(snap->bytes_per_token)));
    } else {
        summary_->setText(QString());
    }
    if (const QString w = state_.window_storage(); !w.isEmpty())
        summary_->setText(
            summary_->text().isEmpty() ? w : summary_->text() + QStringLiteral(" · ") + w);
    if (state_.dropped() > 0)
        summary_->setText(
            summary_->text() +
            QStringLiteral(" · %1 snapshots dropped (the view fell behind)").arg(state_.dropped()));
    if (const MemoryCounters* m = state_.last_memory(); m && m->kv_bytes > 0) {
        const double f = double(m->kv_used_bytes) / double(m->kv_bytes);
        budget_->setValue(std::clamp(int(std::lround(f * 1000)), 0, 1000));
        budget_->setFormat(
            QStringLiteral("KV used %1 of %2 (%3)")
                .arg(format_bytes(m->kv_used_bytes), format_bytes(m->kv_bytes), format_percent(f)));
    } else {
        budget_->setValue(0);
        budget_->setFormat(QStringLiteral("KV bytes: no memory counters yet"));
    }
    QList<QPointF> used;
    for (const MemorySample& s : state_.memory()) {
        used.append({s.t_s, double(s.counters.kv_used_bytes) / (1024.0 * 1024.0)});
    }
    chart_->set_points(used_series_, used);
}

}  // namespace fluoro::ui
