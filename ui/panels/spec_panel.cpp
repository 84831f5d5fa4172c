#include "panels/spec_panel.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>

#include "panels/line_chart.h"

namespace fluoro::ui {

namespace {
constexpr int kStepLabelW = 70;
}

SpecTimeline::SpecTimeline(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
}

int SpecTimeline::row_height() const {
    return fontMetrics().height() + 10;
}

QSize SpecTimeline::sizeHint() const {
    const int rows = state_ ? int(state_->rows().size()) : 0;
    return {400, std::max(60, rows * row_height() + 4)};
}

void SpecTimeline::set_state(const SpecState* state) {
    state_ = state;
    layout_chips();
    setMinimumHeight(sizeHint().height());
    updateGeometry();
    update();
}

void SpecTimeline::layout_chips() {
    hits_.clear();
    if (!state_) return;
    const QFontMetrics fm(font());
    const int rh = row_height();
    for (size_t r = 0; r < state_->rows().size(); ++r) {
        int x = kStepLabelW;
        const auto& chips = state_->rows()[r].chips;
        for (size_t c = 0; c < chips.size(); ++c) {
            const QString text = state_->vocab().label(chips[c].id, 14);
            const int w = fm.horizontalAdvance(text) + 10;
            hits_.push_back({QRect(x, int(r) * rh + 3, w, rh - 6), r, c});
            x += w + (chips[c].drafted && c + 1 < chips.size() && !chips[c + 1].drafted ? 12 : 3);
        }
    }
}

QString SpecTimeline::tooltip_at(QPoint pos) const {
    for (const Hit& h : hits_) {
        if (!h.rect.contains(pos)) continue;
        const SpecRow& row = state_->rows()[h.row];
        const SpecChip& c = row.chips[h.chip];
        QString text = QStringLiteral("step %1 · “%2” (id %3)\n%4")
                           .arg(row.step.step)
                           .arg(state_->vocab().label(c.id, 40))
                           .arg(c.id)
                           .arg(chip_kind_label(c.kind));
        if (c.drafted)
            text += QStringLiteral(" at draft position %1\ndraft q %2 · target p %3")
                        .arg(c.position + 1)
                        .arg(double(c.q), 0, 'f', 4)
                        .arg(double(c.p), 0, 'f', 4);
        else
            text += QStringLiteral(" — drawn by the target model");
        if (row.step.draft_ns > 0 || row.step.verify_ns > 0)
            text += QStringLiteral("\nstep time: draft %1 · verify %2")
                        .arg(format_ms(double(row.step.draft_ns) * 1e-6),
                             format_ms(double(row.step.verify_ns) * 1e-6));
        return text;
    }
    return {};
}

void SpecTimeline::mouseMoveEvent(QMouseEvent* event) {
    const QString text = tooltip_at(event->position().toPoint());
    if (text.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(event->globalPosition().toPoint(), text, this);
}

void SpecTimeline::paintEvent(QPaintEvent* event) {
    QPainter p(this);
    const QPalette pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Base));
    if (!state_) return;
    const int rh = row_height();
    p.setPen(pal.color(QPalette::PlaceholderText));
    for (size_t r = 0; r < state_->rows().size(); ++r) {
        const QRect label(4, int(r) * rh, kStepLabelW - 8, rh);
        if (!label.intersects(event->rect())) continue;
        p.drawText(label, Qt::AlignVCenter | Qt::AlignLeft,
                   QStringLiteral("step %1").arg(state_->rows()[r].step.step));
    }
    p.setRenderHint(QPainter::Antialiasing);
    for (const Hit& h : hits_) {
        if (!h.rect.intersects(event->rect())) continue;
        const SpecChip& c = state_->rows()[h.row].chips[h.chip];
        const QColor bg = chip_color(c.kind, pal);
        p.setBrush(bg);
        p.setPen(c.drafted ? Qt::NoPen : QPen(text_on(bg), 1, Qt::DashLine));
        p.drawRoundedRect(h.rect, 4, 4);
        p.setPen(text_on(bg));
        p.drawText(h.rect, Qt::AlignCenter, state_->vocab().label(c.id, 14));
    }
}

PositionBars::PositionBars(QWidget* parent) : QWidget(parent) {}

void PositionBars::set_positions(std::vector<SpecState::Position> positions) {
    positions_ = std::move(positions);
    update();
}

void PositionBars::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Base));
    const QFontMetrics fm(font());
    p.setPen(pal.color(QPalette::Text));
    p.drawText(QRect(0, 2, width(), fm.height()), Qt::AlignHCenter,
               QStringLiteral("Acceptance by draft position"));
    if (positions_.empty()) return;
    const int top = fm.height() * 2 + 6, bottom = height() - fm.height() - 6;
    const int n = int(positions_.size());
    const int slot = std::max(8, (width() - 8) / n);
    for (int i = 0; i < n; ++i) {
        const double rate = positions_[size_t(i)].rate();
        const int h = int(rate * (bottom - top));
        const QRect bar(4 + i * slot + slot / 6, bottom - h, slot * 2 / 3, h);
        p.fillRect(bar, chip_color(ChipKind::Accepted, pal).darker(is_dark(pal) ? 80 : 120));
        p.setPen(pal.color(QPalette::Text));
        p.drawText(QRect(4 + i * slot, bottom - h - fm.height() - 2, slot, fm.height()),
                   Qt::AlignHCenter, QStringLiteral("%1%").arg(int(rate * 100 + 0.5)));
        p.drawText(QRect(4 + i * slot, bottom + 3, slot, fm.height()), Qt::AlignHCenter,
                   QString::number(i + 1));
    }
    p.setPen(pal.color(QPalette::Mid));
    p.drawLine(4, bottom, width() - 4, bottom);
}

SpecPanel::SpecPanel(QWidget* parent)
    : EventPanel(parent),
      stack_(new QStackedWidget(this)),
      notice_(make_notice(QStringLiteral("Speculative decoding is not active "
                                         "(no draft steps in this run)."),
                          this)),
      summary_(new QLabel(this)),
      legend_(new QLabel(this)),
      scroll_(new QScrollArea(this)),
      timeline_(new SpecTimeline),
      table_(new QTableView(this)),
      model_(new SpecStepModel(this)),
      rate_chart_(new LineChart(QStringLiteral("Acceptance rate"),
                                QStringLiteral("verification step"), QString(), this)),
      length_chart_(new LineChart(QStringLiteral("Accepted tokens per step"),
                                  QStringLiteral("verification step"), QString(), this)),
      positions_(new PositionBars(this)) {
    scroll_->setWidget(timeline_);
    scroll_->setWidgetResizable(true);
    table_->setModel(model_);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setStretchLastSection(true);
    auto* tabs = new QTabWidget(this);
    tabs->addTab(scroll_, QStringLiteral("Timeline"));
    tabs->addTab(table_, QStringLiteral("Steps"));
    rate_chart_->set_y_range(0, 1);
    rate_chart_->set_integer_x();
    length_chart_->set_integer_x();
    rate_step_ = rate_chart_->add_series(QStringLiteral("this step"), category_color(0));
    rate_run_ = rate_chart_->add_series(QStringLiteral("run so far"), category_color(1));
    len_step_ = length_chart_->add_series(QStringLiteral("this step"), category_color(4));
    len_run_ = length_chart_->add_series(QStringLiteral("mean so far"), category_color(1));

    auto* legend = legend_;
    update_legend();

    auto* active = new QWidget(this);
    auto* over_time = new QTabWidget(active);
    over_time->addTab(rate_chart_, QStringLiteral("Acceptance rate"));
    over_time->addTab(length_chart_, QStringLiteral("Accepted length"));
    over_time->addTab(positions_, QStringLiteral("By draft position"));
    auto* split = new QSplitter(Qt::Vertical, active);
    split->addWidget(tabs);
    split->addWidget(over_time);
    auto* head = new QHBoxLayout;
    // Both wrap rather than widening the panel (and the window) by a whole line.
    summary_->setWordWrap(true);
    legend->setWordWrap(true);
    head->addWidget(summary_, 1);
    head->addWidget(legend);
    auto* al = new QVBoxLayout(active);
    al->setContentsMargins(0, 0, 0, 0);
    al->addLayout(head);
    al->addWidget(split, 1);
    stack_->addWidget(notice_);
    stack_->addWidget(active);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(stack_);
    refresh();
}

void SpecPanel::update_legend() {
    QStringList keys;
    for (ChipKind k :
         {ChipKind::Accepted, ChipKind::Rejected, ChipKind::Resampled, ChipKind::Bonus})
        keys << QStringLiteral("<span style='background:%1;color:%2'>&nbsp;%3&nbsp;</span>")
                    .arg(chip_color(k, palette()).name(), text_on(chip_color(k, palette())).name(),
                         chip_kind_label(k));
    legend_->setText(keys.join(QStringLiteral(" ")));
}

void SpecPanel::changeEvent(QEvent* event) {
    EventPanel::changeEvent(event);
    if (event->type() == QEvent::PaletteChange) update_legend();  // chip colors follow the theme
}

void SpecPanel::consume(const std::vector<Event>& batch) {
    bool changed = false;
    for (const Event& e : batch) changed |= state_.consume(e);
    if (changed) refresh();
}

void SpecPanel::reset() {
    state_.reset();
    refresh();
}

QString SpecPanel::notice() const {
    return stack_->currentWidget() == notice_ ? notice_->text() : QString();
}

QString SpecPanel::summary() const {
    return summary_->text();
}

void SpecPanel::refresh() {
    stack_->setCurrentIndex(state_.active() ? 1 : 0);
    model_->set_state(&state_);
    const bool at_bottom =
        scroll_->verticalScrollBar()->value() >= scroll_->verticalScrollBar()->maximum() - 4;
    timeline_->set_state(&state_);
    if (at_bottom) scroll_->verticalScrollBar()->setValue(scroll_->verticalScrollBar()->maximum());
    positions_->set_positions(state_.by_position());
    QString drafter;
    if (state_.active()) drafter = QString::fromStdString(state_.rows().back().step.drafter);
    summary_->setText(state_.active() ? QStringLiteral("%1 steps · drafter %2 · acceptance %3 · %4 "
                                                       "accepted tokens per step")
                                            .arg(state_.rows().size())
                                            .arg(drafter.isEmpty() ? QStringLiteral("?") : drafter)
                                            .arg(format_percent(state_.acceptance_rate()))
                                            .arg(state_.mean_accepted(), 0, 'f', 2)
                                      : QString());
    QList<QPointF> rate_step, rate_run, len_step, len_run;
    int64_t drafted = 0, accepted = 0;
    for (size_t i = 0; i < state_.rows().size(); ++i) {
        const SpecStep& s = state_.rows()[i].step;
        const int a = std::clamp(s.accepted, 0, int(s.drafted.size()));
        drafted += int64_t(s.drafted.size());
        accepted += a;
        const double x = double(i + 1);
        if (!s.drafted.empty()) rate_step.append({x, double(a) / double(s.drafted.size())});
        if (drafted > 0) rate_run.append({x, double(accepted) / double(drafted)});
        len_step.append({x, double(a)});
        len_run.append({x, double(accepted) / x});
    }
    rate_chart_->set_points(rate_step_, rate_step);
    rate_chart_->set_points(rate_run_, rate_run);
    length_chart_->set_points(len_step_, len_step);
    length_chart_->set_points(len_run_, len_run);
}

}  // namespace fluoro::ui
