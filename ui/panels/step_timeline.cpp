#include "panels/step_timeline.h"

#include <QPainter>
#include <algorithm>

#include "panels/panel_util.h"

namespace fluoro::ui {

namespace {

QString text_of(std::string_view s) {
    return QString::fromUtf8(s.data(), qsizetype(s.size()));
}

QString duration_text(int64_t ns) {
    return ns >= 1000000 ? QStringLiteral("%1 ms").arg(double(ns) * 1e-6, 0, 'f', 2)
                         : QStringLiteral("%1 µs").arg(double(ns) * 1e-3, 0, 'f', 1);
}

// A layer's extent: the run of consecutive ops that carry its number.
struct LayerSpan {
    int32_t layer;
    size_t first, last;  // op indices
};

std::vector<LayerSpan> layer_spans(const StepTrace& t) {
    std::vector<LayerSpan> out;
    for (size_t i = 0; i < t.ops.size(); ++i) {
        const int32_t l = t.ops[i].layer;
        if (l < 0) continue;
        if (!out.empty() && out.back().layer == l && out.back().last + 1 == i)
            out.back().last = i;
        else
            out.push_back({l, i, i});
    }
    return out;
}

}  // namespace

StepTimeline::StepTimeline(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void StepTimeline::set_step(std::optional<StepEvent> step) {
    step_ = std::move(step);
    update();
}

QString StepTimeline::headline() const {
    if (!step_ || !step_->trace)
        return QStringLiteral(
            "No traced step — View ▸ Trace every operation records each step's "
            "operations (telemetry level trace).");
    const StepTrace& t = *step_->trace;
    return QStringLiteral("%1 step %2 · %3 · %4 ops in %5 layers · %6 host thread(s)")
        .arg(text_of(step_phase_name(step_->phase)))
        .arg(step_->index)
        .arg(duration_text(step_->end_ns - step_->start_ns))
        .arg(t.ops.size())
        .arg(layer_spans(t).size())
        .arg(t.threads);
}

int StepTimeline::row_height() const {
    // The rows (layers, ops, one per host thread) share the height above the time axis, between
    // one and three text lines each.
    const int line = QFontMetrics(font()).height();
    const int rows = 2 + (step_ && step_->trace ? std::max(1, step_->trace->threads) : 1);
    const double room = plot_rect().height() - line - 4;  // the axis' labels below
    return std::clamp(int(room / rows) - 2, line + 4, 3 * line);
}

QRectF StepTimeline::plot_rect() const {
    const QFontMetrics fm(font());
    const double left = fm.horizontalAdvance(QStringLiteral("worker 00")) + 8;
    const double top = fm.height() + 8;
    return QRectF(left, top, std::max(10.0, width() - left - 8), height() - top - 4);
}

double StepTimeline::x_of(int64_t ns) const {
    const QRectF r = plot_rect();
    const double span = double(std::max<int64_t>(1, step_->end_ns - step_->start_ns));
    return r.left() + r.width() * std::clamp(double(ns - step_->start_ns) / span, 0.0, 1.0);
}

int StepTimeline::row_middle(int row) const {
    const int h = row_height();
    return int(plot_rect().top()) + row * (h + 2) + h / 2;
}

void StepTimeline::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette pal = palette();
    const QFontMetrics fm(font());
    p.setPen(pal.color(QPalette::Text));
    p.drawText(QRectF(4, 2, width() - 8, fm.height() + 2), Qt::AlignLeft | Qt::AlignVCenter,
               fm.elidedText(headline(), Qt::ElideRight, width() - 8));
    if (!step_ || !step_->trace) return;
    const StepTrace& t = *step_->trace;
    const QRectF r = plot_rect();
    const int h = row_height();
    const auto row_top = [&](int row) { return r.top() + double(row) * (h + 2); };
    const auto label = [&](int row, const QString& text) {
        p.setPen(pal.color(QPalette::Text));
        p.drawText(QRectF(2, row_top(row), r.left() - 6, h), Qt::AlignRight | Qt::AlignVCenter,
                   text);
    };
    label(0, QStringLiteral("layers"));
    label(1, QStringLiteral("ops"));
    for (int w = 0; w < t.threads; ++w)
        label(2 + w, w == 0 ? QStringLiteral("engine") : QStringLiteral("worker %1").arg(w));

    // Layers, alternating shades, numbered where there is room.
    for (const LayerSpan& l : layer_spans(t)) {
        const double x0 = x_of(t.ops[l.first].start_ns), x1 = x_of(t.ops[l.last].end_ns);
        const QRectF box(x0, row_top(0), std::max(1.0, x1 - x0), h);
        p.fillRect(box, l.layer % 2 ? pal.color(QPalette::Mid) : pal.color(QPalette::Midlight));
        const QString n = QString::number(l.layer);
        if (fm.horizontalAdvance(n) + 2 < box.width()) {
            p.setPen(pal.color(QPalette::Text));
            p.drawText(box, Qt::AlignCenter, n);
        }
    }
    // Ops, coloured by category.
    for (const OpSpan& op : t.ops) {
        const double x0 = x_of(op.start_ns), x1 = x_of(op.end_ns);
        p.fillRect(QRectF(x0, row_top(1), std::max(1.0, x1 - x0), h),
                   category_color(size_t(op.category)));
    }
    // Host threads: busy in the first category colour, the engine thread's waits in grey.
    for (const WorkerBusy& w : t.workers) {
        if (w.worker < 0 || w.worker >= t.threads) continue;
        const double x0 = x_of(w.start_ns), x1 = x_of(w.end_ns);
        p.fillRect(QRectF(x0, row_top(2 + w.worker) + 2, std::max(1.0, x1 - x0), h - 4),
                   w.tasks > 0 ? category_color(0) : pal.color(QPalette::Dark));
    }
    // The time axis: the step's start and end, and its middle.
    const double axis = row_top(2 + t.threads) + 2;
    p.setPen(pal.color(QPalette::Mid));
    p.drawLine(QPointF(r.left(), axis), QPointF(r.right(), axis));
    p.setPen(pal.color(QPalette::Text));
    const int64_t dur = step_->end_ns - step_->start_ns;
    const QRectF labels(r.left(), axis + 2, r.width(), fm.height());
    p.drawText(labels, Qt::AlignLeft, QStringLiteral("0"));
    p.drawText(labels, Qt::AlignHCenter, duration_text(dur / 2));
    p.drawText(labels, Qt::AlignRight, duration_text(dur));
}

QString StepTimeline::tooltip_at(QPoint pos) const {
    if (!step_ || !step_->trace) return {};
    const StepTrace& t = *step_->trace;
    const QRectF r = plot_rect();
    const int h = row_height();
    if (pos.x() < r.left() || pos.x() > r.right() || pos.y() < r.top()) return {};
    const int row = int((pos.y() - r.top()) / (h + 2));
    const double x = pos.x();
    const auto under = [&](int64_t a, int64_t b) { return x >= x_of(a) - 1 && x <= x_of(b) + 1; };
    if (row == 0) {
        for (const LayerSpan& l : layer_spans(t)) {
            if (!under(t.ops[l.first].start_ns, t.ops[l.last].end_ns)) continue;
            double bytes = 0;
            for (size_t i = l.first; i <= l.last; ++i) bytes += t.ops[i].bytes;
            const int64_t ns = t.ops[l.last].end_ns - t.ops[l.first].start_ns;
            return QStringLiteral("layer %1 · %2 · %3 ops · %4 MiB read")
                .arg(l.layer)
                .arg(duration_text(ns))
                .arg(l.last - l.first + 1)
                .arg(bytes / (1024.0 * 1024.0), 0, 'f', 2);
        }
        return {};
    }
    if (row == 1) {
        for (const OpSpan& op : t.ops) {
            if (!under(op.start_ns, op.end_ns)) continue;
            const int64_t ns = std::max<int64_t>(1, op.end_ns - op.start_ns);
            QString tip = QStringLiteral("%1 · layer %2 · %3 · %4")
                              .arg(text_of(t.name_of(op)))
                              .arg(op.layer < 0 ? QStringLiteral("—") : QString::number(op.layer))
                              .arg(text_of(time_category_name(op.category)))
                              .arg(duration_text(op.end_ns - op.start_ns));
            if (op.bytes > 0)
                tip += QStringLiteral("\n%1 MiB read · %2 GB/s")
                           .arg(op.bytes / (1024.0 * 1024.0), 0, 'f', 3)
                           .arg(op.bytes / double(ns), 0, 'f', 2);  // bytes per ns = GB/s
            if (op.flops > 0)
                tip += QStringLiteral("\n%1 GFLOP/s").arg(op.flops / double(ns), 0, 'f', 1);
            return tip;
        }
        return {};
    }
    const int worker = row - 2;
    for (const WorkerBusy& w : t.workers) {
        if (w.worker != worker || !under(w.start_ns, w.end_ns)) continue;
        return w.tasks > 0 ? QStringLiteral("%1 · %2 task(s) · %3")
                                 .arg(worker == 0 ? QStringLiteral("engine thread")
                                                  : QStringLiteral("worker %1").arg(worker))
                                 .arg(w.tasks)
                                 .arg(duration_text(w.end_ns - w.start_ns))
                           : QStringLiteral("engine thread waiting for the workers · %1")
                                 .arg(duration_text(w.end_ns - w.start_ns));
    }
    return {};
}

bool StepTimeline::event(QEvent* event) {
    return show_hover_tooltip(this, event, [this](QPoint p) { return tooltip_at(p); }) ||
           QWidget::event(event);
}

}  // namespace fluoro::ui
