#include "panels/profiler_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "panels/line_chart.h"
#include "panels/panel_util.h"
#include "panels/roofline_chart.h"
#include "panels/step_timeline.h"

namespace fluoro::ui {

namespace {
double wall_ms(const StepEvent& e) {
    return double(std::max<int64_t>(e.end_ns - e.start_ns, 0)) * 1e-6;
}
QString category_name(size_t c) {
    return QString::fromUtf8(time_category_name(TimeCategory(c)).data(),
                             qsizetype(time_category_name(TimeCategory(c)).size()));
}
}  // namespace

StepStackChart::StepStackChart(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void StepStackChart::set_state(const ProfilerState* state) {
    // The tallest step so far, from the steps added since the last call (all of them after a
    // reset or another state).
    const size_t n = state ? state->steps().size() : 0;
    if (state != state_ || n < measured_) {
        max_ms_ = 0;
        measured_ = 0;
    }
    state_ = state;
    for (size_t i = measured_; i < n; ++i) max_ms_ = std::max(max_ms_, wall_ms(state_->steps()[i]));
    measured_ = n;
    update();
}

QRectF StepStackChart::plot_rect() const {
    const QFontMetrics fm(font());
    const double left = fm.horizontalAdvance(QStringLiteral("000.0 ms")) + 8;
    const double top = fm.height() * 2 + 10;
    return QRectF(left, top, width() - left - 8, height() - top - fm.height() - 8);
}

int StepStackChart::step_at(QPoint pos) const {
    const QRectF r = plot_rect();
    if (!state_ || state_->steps().empty() || !r.contains(pos)) return -1;
    const int n = int(state_->steps().size());
    return std::clamp(int((pos.x() - r.left()) / r.width() * n), 0, n - 1);
}

QString StepStackChart::tooltip_at(QPoint pos) const {
    const int i = step_at(pos);
    if (i < 0) return {};
    const StepEvent& e = state_->steps()[size_t(i)];
    const auto phase = step_phase_name(e.phase);
    QString text = QStringLiteral("step %1 · %2 · %3 tokens · %4")
                       .arg(e.index)
                       .arg(QString::fromUtf8(phase.data(), qsizetype(phase.size())))
                       .arg(e.tokens)
                       .arg(format_ms(wall_ms(e)));
    for (size_t c = 0; c < kTimeCategories; ++c)
        if (e.op_ns[c] > 0)
            text += QStringLiteral("\n%1: %2")
                        .arg(category_name(c), format_ms(double(e.op_ns[c]) * 1e-6));
    if (e.trace) text += QStringLiteral("\nclick: its timeline and roofline");
    return text;
}

void StepStackChart::mouseMoveEvent(QMouseEvent* event) {
    const QString text = tooltip_at(event->position().toPoint());
    if (text.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(event->globalPosition().toPoint(), text, this);
}

void StepStackChart::mousePressEvent(QMouseEvent* event) {
    if (const int i = step_at(event->position().toPoint()); i >= 0) emit step_clicked(i);
}

void StepStackChart::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Base));
    const QFontMetrics fm(font());
    p.setPen(pal.color(QPalette::Text));
    const bool ops = state_ && state_->has_op_times();
    p.drawText(QPointF(6, fm.ascent() + 3),
               ops ? QStringLiteral("Time per step by op category")
                   : QStringLiteral("Time per step (op split needs telemetry level Full)"));
    // Legend.
    int x = 6;
    const int ly = fm.height() + 6;
    if (ops) {
        for (size_t c = 0; c < kTimeCategories; ++c) {
            const QString name = category_name(c);
            p.fillRect(QRect(x, ly, 10, 10), category_color(c));
            p.setPen(pal.color(QPalette::Text));
            p.drawText(QPoint(x + 13, ly + fm.ascent() - 2), name);
            x += 13 + fm.horizontalAdvance(name) + 10;
        }
    }
    if (!state_ || state_->steps().empty() || max_ms_ <= 0) return;
    const QRectF r = plot_rect();
    const auto& steps = state_->steps();
    // At most one bar per pixel column: a column holding several steps draws its slowest (the
    // tooltip still names every step).
    const size_t columns = std::min(steps.size(), size_t(std::max(1.0, std::floor(r.width()))));
    const double bw = r.width() / double(columns);
    const double scale = r.height() / (max_ms_ * 1.05);
    for (size_t col = 0; col < columns; ++col) {
        const size_t lo = col * steps.size() / columns, hi = (col + 1) * steps.size() / columns;
        size_t slowest = lo;
        for (size_t i = lo + 1; i < hi; ++i)
            if (wall_ms(steps[i]) > wall_ms(steps[slowest])) slowest = i;
        const StepEvent& e = steps[slowest];
        const double left = r.left() + double(col) * bw;
        const double w = std::max(bw > 3 ? bw - 1 : bw, 0.6);
        if (!ops) {
            const double h = wall_ms(e) * scale;
            p.fillRect(QRectF(left, r.bottom() - h, w, h), category_color(0));
            continue;
        }
        double y = r.bottom();
        double accounted = 0;
        for (size_t c = 0; c < kTimeCategories; ++c) {
            const double ms = double(e.op_ns[c]) * 1e-6;
            accounted += ms;
            const double h = ms * scale;
            p.fillRect(QRectF(left, y - h, w, h), category_color(c));
            y -= h;
        }
        // Wall time no category claimed: outlined, unfilled.
        const double rest = std::max(wall_ms(e) - accounted, 0.0) * scale;
        if (rest >= 1.0) {
            p.setPen(QPen(pal.color(QPalette::Mid), 0));
            p.setBrush(Qt::NoBrush);
            p.drawRect(QRectF(left, y - rest, w, rest));
        }
    }
    // Axis: 0 and the max.
    p.setPen(pal.color(QPalette::Mid));
    p.drawLine(r.bottomLeft(), r.bottomRight());
    p.drawLine(r.bottomLeft(), r.topLeft());
    p.setPen(pal.color(QPalette::Text));
    const double top_ms = max_ms_ * 1.05;
    p.drawText(QRectF(0, r.top() - fm.height() / 2.0, r.left() - 4, fm.height()), Qt::AlignRight,
               format_ms(top_ms));
    p.drawText(QRectF(0, r.bottom() - fm.height() / 2.0, r.left() - 4, fm.height()), Qt::AlignRight,
               QStringLiteral("0"));
    p.drawText(QRectF(r.left(), r.bottom() + 2, r.width(), fm.height()), Qt::AlignLeft,
               QStringLiteral("step %1").arg(steps.front().index));
    p.drawText(QRectF(r.left(), r.bottom() + 2, r.width(), fm.height()), Qt::AlignRight,
               QStringLiteral("step %1").arg(steps.back().index));
}

ProfilerPanel::ProfilerPanel(QWidget* parent)
    : EventPanel(parent),
      stack_(new QStackedWidget(this)),
      notice_(make_notice(QStringLiteral("No steps yet — the profile fills in "
                                         "as a run prefills and decodes."),
                          this)),
      timeline_(new StepTimeline(this)),
      roofline_(new RooflineChart(this)),
      steps_(new StepStackChart(this)),
      speed_(new LineChart(QStringLiteral("Decode speed"), QStringLiteral("s"),
                           QStringLiteral("tok/s"), this)),
      memory_(new LineChart(QStringLiteral("Memory"), QStringLiteral("s"), QStringLiteral("MiB"),
                            this)),
      table_(new QTableView(this)),
      model_(new ProfileSplitModel(this)) {
    decode_series_ = speed_->add_series(QStringLiteral("decode step tok/s"), category_color(0));
    weights_series_ = memory_->add_series(QStringLiteral("weights"), category_color(6));
    kv_series_ = memory_->add_series(QStringLiteral("KV budget"), category_color(2));
    kv_used_series_ = memory_->add_series(QStringLiteral("KV used"), category_color(0));
    scratch_series_ = memory_->add_series(QStringLiteral("scratch"), category_color(4));
    table_->setModel(model_);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setAlternatingRowColors(true);

    auto* charts = charts_ = new QTabWidget(this);
    charts->addTab(steps_, QStringLiteral("Per step"));
    charts->addTab(timeline_, QStringLiteral("Timeline"));
    charts->addTab(roofline_, QStringLiteral("Roofline"));
    charts->addTab(speed_, QStringLiteral("Decode speed"));
    charts->addTab(memory_, QStringLiteral("Memory"));
    auto* split = new AdaptiveSplitter(900, this);
    split->addWidget(charts);
    split->addWidget(table_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    connect(steps_, &StepStackChart::step_clicked, this, [this](int i) {
        if (pick_step(i)) charts_->setCurrentWidget(timeline_);
    });
    stack_->addWidget(notice_);
    stack_->addWidget(split);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(stack_);
    refresh();
}

void ProfilerPanel::consume(const std::vector<Event>& batch) {
    bool changed = false;
    for (const Event& e : batch) {
        if (std::holds_alternative<RunStarted>(e)) {
            restart_charts();  // the state resets too
            picked_.reset();
        }
        changed |= state_.consume(e);
    }
    if (changed) refresh();
}

void ProfilerPanel::reset() {
    state_.reset();
    picked_.reset();
    restart_charts();
    refresh();
}

void ProfilerPanel::restart_charts() {
    speed_->clear_points();
    memory_->clear_points();
    charted_steps_ = charted_memory_ = 0;
}

bool ProfilerPanel::pick_step(int position) {
    if (position < 0 || size_t(position) >= state_.steps().size() ||
        !state_.steps()[size_t(position)].trace)
        return false;
    picked_ = size_t(position);
    refresh();
    return true;
}

QString ProfilerPanel::notice() const {
    return stack_->currentWidget() == notice_ ? notice_->text() : QString();
}

void ProfilerPanel::refresh() {
    stack_->setCurrentIndex(state_.steps().empty() && state_.memory().empty() ? 0 : 1);
    steps_->set_state(&state_);
    const StepEvent* traced = picked_ && *picked_ < state_.steps().size()
                                  ? &state_.steps()[*picked_]
                                  : state_.last_traced();
    if (!traced) {
        if (timeline_->step()) {
            timeline_->set_step(std::nullopt);
            roofline_->set_ops({}, -1, StepPhase::Decode);
        }
    } else if (!timeline_->step() || timeline_->step()->trace != traced->trace) {  // another step
        timeline_->set_step(*traced);
        roofline_->set_ops(op_costs(*traced->trace), traced->index, traced->phase);
    }
    model_->set_split(state_.split());
    // The charts get only the points of steps and counters that arrived since the last refresh.
    const auto& steps = state_.steps();
    const auto& memory = state_.memory();
    if (steps.size() < charted_steps_ || memory.size() < charted_memory_) restart_charts();
    QList<QPointF> decode;
    for (size_t i = charted_steps_; i < steps.size(); ++i) {
        const StepEvent& e = steps[i];
        const double s = double(e.end_ns - e.start_ns) * 1e-9;
        if (e.phase == StepPhase::Decode && s > 0)
            decode.append({double(e.end_ns) * 1e-9, double(e.tokens) / s});
    }
    charted_steps_ = steps.size();
    speed_->append_points(decode_series_, decode);
    QList<QPointF> weights, kv, kv_used, scratch;
    constexpr double MiB = 1024.0 * 1024.0;
    for (size_t i = charted_memory_; i < memory.size(); ++i) {
        const MemoryCounters& m = memory[i];
        const double t = double(m.t_ns) * 1e-9;
        weights.append({t, double(m.weights_bytes) / MiB});
        kv.append({t, double(m.kv_bytes) / MiB});
        kv_used.append({t, double(m.kv_used_bytes) / MiB});
        scratch.append({t, double(m.scratch_bytes) / MiB});
    }
    charted_memory_ = memory.size();
    memory_->append_points(weights_series_, weights);
    memory_->append_points(kv_series_, kv);
    memory_->append_points(kv_used_series_, kv_used);
    memory_->append_points(scratch_series_, scratch);
}

}  // namespace fluoro::ui
