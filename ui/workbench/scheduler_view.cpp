#include "workbench/scheduler_view.h"

#include <QEvent>
#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>

namespace fluoro::ui {
namespace {

constexpr size_t kMaxSteps = 4000;
constexpr double kWindowMs = 4000;        // the time shown at most: the last 4 s of steps
constexpr int kGutter = 92;               // slot labels and KV tokens
constexpr int kHeader = 22, kQueue = 48;  // the queue strip and the time axis under it

}  // namespace

SchedulerView::SchedulerView(std::function<std::shared_ptr<app::BatchSchedule>()> source,
                             QWidget* parent)
    : QWidget(parent), source_(std::move(source)) {
    setObjectName("scheduler_view");
    setMinimumSize(320, 160);
    setMouseTracking(true);
    timer_.setInterval(100);
    connect(&timer_, &QTimer::timeout, this, &SchedulerView::poll);
    timer_.start();
}

void SchedulerView::poll() {
    std::shared_ptr<app::BatchSchedule> s = source_ ? source_() : nullptr;
    if (s != current_) {  // another server (or none): its own picture
        if (s) {
            steps_.clear();
            slots_ = s->n_slots();
            max_waiting_ = 0;
        }
        current_ = s;
        update();
    }
    if (!current_) return;
    std::vector<app::ScheduleStep> fresh = current_->take();
    if (fresh.empty()) return;
    for (app::ScheduleStep& st : fresh) {
        max_waiting_ = std::max(max_waiting_, st.waiting);
        steps_.push_back(std::move(st));
    }
    while (steps_.size() > kMaxSteps) steps_.pop_front();
    update();
}

std::pair<int, int> SchedulerView::hit(QPoint p) const {
    for (const Box& b : boxes_)
        if (b.rect.contains(p)) return {b.step, b.part};
    return {-1, -1};
}

QString SchedulerView::describe(int step, int part) const {
    if (step < 0 || size_t(step) >= steps_.size()) return {};
    const app::ScheduleStep& st = steps_[size_t(step)];
    if (part < 0 || size_t(part) >= st.parts.size()) return {};
    const app::SchedulePart& p = st.parts[size_t(part)];
    return tr("request (run %1) · slot %2\nstep %3: %4 · %5 ms\nKV %6 tokens after it · "
              "%7 running, %8 waiting")
        .arg(p.request)
        .arg(p.slot)
        .arg(st.index)
        .arg(p.prefill ? tr("%1 prompt tokens").arg(p.tokens) : tr("its next token"))
        .arg(st.end_ms - st.start_ms, 0, 'f', 1)
        .arg(p.kv_tokens)
        .arg(st.running)
        .arg(st.waiting);
}

bool SchedulerView::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* h = static_cast<QHelpEvent*>(e);
        const auto [step, part] = hit(h->pos());
        if (step >= 0)
            QToolTip::showText(h->globalPos(), describe(step, part), this);
        else
            QToolTip::hideText();
        return true;
    }
    return QWidget::event(e);
}

void SchedulerView::paintEvent(QPaintEvent*) {
    QPainter g(this);
    g.fillRect(rect(), palette().base());
    boxes_.clear();
    const QColor text = palette().text().color();
    g.setPen(text);
    if (!current_ && steps_.empty()) {
        g.drawText(rect().adjusted(12, 12, -12, -12), Qt::AlignCenter | Qt::TextWordWrap,
                   tr("No batch to show. Serve with parallel slots (API server dock: "
                      "Parallel slots above 1, then Start server) and the requests' steps are "
                      "drawn here as they run."));
        return;
    }
    const int64_t n = std::max<int64_t>(1, slots_);
    const QRectF plot(kGutter, kHeader, std::max(10, width() - kGutter - 8),
                      std::max(10, height() - kHeader - kQueue - 8));
    const double row_h = plot.height() / double(n);
    // Header: the load after the last step.
    if (!steps_.empty()) {
        const app::ScheduleStep& last = steps_.back();
        const double kv =
            last.kv_bytes > 0 ? 100.0 * double(last.kv_used_bytes) / double(last.kv_bytes) : 0.0;
        g.drawText(QRectF(4, 2, width() - 8, kHeader - 2), Qt::AlignLeft | Qt::AlignVCenter,
                   tr("%1 slots · step %2 · %3 running · %4 waiting · KV pool %5 % used")
                       .arg(n)
                       .arg(last.index)
                       .arg(last.running)
                       .arg(last.waiting)
                       .arg(kv, 0, 'f', 1));
    } else {
        g.drawText(QRectF(4, 2, width() - 8, kHeader - 2), Qt::AlignLeft | Qt::AlignVCenter,
                   tr("%1 slots · waiting for requests").arg(n));
    }
    // The last 4 s of steps, or all of them when they span less.
    const double t1 = steps_.empty() ? kWindowMs : steps_.back().end_ms;
    const double t0 = std::max(steps_.empty() ? 0.0 : steps_.front().start_ms, t1 - kWindowMs);
    const double span = std::max(1.0, t1 - t0);
    const auto x_of = [&](double t) { return plot.left() + (t - t0) / span * plot.width(); };

    // Rows and the KV each slot holds after its last step.
    std::vector<int64_t> kv(size_t(n), 0);
    for (const app::ScheduleStep& st : steps_)
        for (const app::SchedulePart& p : st.parts)
            if (p.slot >= 0 && p.slot < n) kv[size_t(p.slot)] = p.kv_tokens;
    for (int64_t s = 0; s < n; ++s) {
        const QRectF row(plot.left(), plot.top() + double(s) * row_h, plot.width(), row_h);
        if (s % 2 == 1) g.fillRect(row, palette().alternateBase());
        g.drawText(QRectF(4, row.top(), kGutter - 8, row.height()),
                   Qt::AlignLeft | Qt::AlignVCenter,
                   tr("slot %1\nKV %2").arg(s).arg(kv[size_t(s)]));
    }
    // The boxes, and per slot the stretches one request holds it (labelled after).
    const QColor prefill(230, 145, 56), decode(70, 130, 180);
    struct Stretch {
        uint64_t request = 0;
        QRectF rect;
    };
    std::vector<Stretch> stretches;
    std::vector<int> open(size_t(n), -1);  // the slot's current stretch
    for (size_t i = 0; i < steps_.size(); ++i) {
        const app::ScheduleStep& st = steps_[i];
        if (st.end_ms < t0) continue;
        const double x0 = std::max(plot.left(), x_of(st.start_ms));
        const double x1 = std::max(x0 + 1.0, x_of(st.end_ms));
        for (size_t j = 0; j < st.parts.size(); ++j) {
            const app::SchedulePart& p = st.parts[j];
            if (p.slot < 0 || p.slot >= n) continue;
            const QRectF r(x0, plot.top() + double(p.slot) * row_h + 2, x1 - x0,
                           std::max(2.0, row_h - 4));
            g.fillRect(r, p.prefill ? prefill : decode);
            boxes_.push_back({r, int(i), int(j)});
            int& s = open[size_t(p.slot)];
            if (s >= 0 && stretches[size_t(s)].request == p.request)
                stretches[size_t(s)].rect |= r;
            else {
                s = int(stretches.size());
                stretches.push_back({p.request, r});
            }
        }
    }
    // Each stretch's request (its run number) where the stretch has room for it.
    g.setPen(Qt::white);
    for (const Stretch& s : stretches) {
        const QString label = QStringLiteral("#%1").arg(s.request);
        if (g.fontMetrics().horizontalAdvance(label) + 6 <= s.rect.width() && s.rect.height() >= 14)
            g.drawText(s.rect.adjusted(3, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter, label);
    }
    g.setPen(text);
    // The queue's depth after each step.
    const QRectF queue(plot.left(), plot.bottom() + 6, plot.width(), kQueue - 24);
    g.drawText(QRectF(4, queue.top(), kGutter - 8, queue.height()),
               Qt::AlignLeft | Qt::AlignVCenter, tr("queue ≤ %1").arg(max_waiting_));
    g.drawRect(queue);
    if (max_waiting_ > 0)
        for (const app::ScheduleStep& st : steps_) {
            if (st.end_ms < t0 || st.waiting == 0) continue;
            const double h = queue.height() * double(st.waiting) / double(max_waiting_);
            const double x0 = std::max(queue.left(), x_of(st.start_ms));
            g.fillRect(QRectF(x0, queue.bottom() - h, std::max(1.0, x_of(st.end_ms) - x0), h),
                       palette().mid());
        }
    // The time axis' ends.
    g.drawText(QRectF(plot.left(), queue.bottom() + 1, 120, 14), Qt::AlignLeft,
               tr("%1 s").arg(t0 / 1000.0, 0, 'f', 1));
    g.drawText(QRectF(plot.right() - 120, queue.bottom() + 1, 120, 14), Qt::AlignRight,
               tr("%1 s").arg(t1 / 1000.0, 0, 'f', 1));
}

}  // namespace fluoro::ui
