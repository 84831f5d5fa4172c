#include "workbench/panel_feeder.h"

#include <QDockWidget>
#include <QElapsedTimer>
#include <QStringList>
#include <algorithm>

#include "panels/event_panel.h"

namespace fluoro::ui {

PanelFeeder::PanelFeeder(QObject* parent) : QObject(parent) {
    pump_.setInterval(0);
    connect(&pump_, &QTimer::timeout, this, &PanelFeeder::run_one);
}

void PanelFeeder::add(EventPanel* panel, QDockWidget* dock) {
    const size_t i = slots_.size();
    slots_.push_back({panel, dock, {}});
    connect(dock, &QDockWidget::visibilityChanged, this, [this, i](bool visible) {
        if (visible) post([this, i] { catch_up(i); });
    });
}

void PanelFeeder::post(std::function<void()> task) {
    tasks_.push_back(std::move(task));
    if (!pump_.isActive()) pump_.start();
}

void PanelFeeder::run_one() {
    if (tasks_.empty()) {
        pump_.stop();
        return;
    }
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    task();
}

void PanelFeeder::flush() {
    while (!tasks_.empty()) run_one();
    pump_.stop();
}

bool PanelFeeder::on_screen(size_t i) const {
    // A background tab of a dock group is "visible" to Qt but has nothing on screen.
    return slots_[i].dock->isVisible() && !slots_[i].dock->visibleRegion().isEmpty();
}

void PanelFeeder::feed(const std::vector<Event>& batch) {
    if (batch.empty()) return;
    auto shared = std::make_shared<const std::vector<Event>>(batch);
    for (size_t i = 0; i < slots_.size(); ++i) post([this, i, shared] { consume(i, shared); });
}

void PanelFeeder::consume(size_t i, const std::shared_ptr<const std::vector<Event>>& batch) {
    Slot& s = slots_[i];
    if (!on_screen(i)) {
        s.pending.insert(s.pending.end(), batch->begin(), batch->end());
        return;
    }
    catch_up(i);
    timed_consume(i, *batch);
}

void PanelFeeder::timed_consume(size_t i, const std::vector<Event>& events) {
    QElapsedTimer clock;
    clock.start();
    slots_[i].panel->consume(events);
    slots_[i].worst_ms = std::max(slots_[i].worst_ms, double(clock.nsecsElapsed()) * 1e-6);
    fed_ += int64_t(events.size());
}

double PanelFeeder::worst_consume_ms(const QString& panel_id) const {
    for (const Slot& s : slots_)
        if (s.panel->panel_id() == panel_id) return s.worst_ms;
    return 0;
}

QString PanelFeeder::consume_report() const {
    QStringList parts;
    for (const Slot& s : slots_)
        parts << QStringLiteral("%1 %2 ms").arg(s.panel->panel_id()).arg(s.worst_ms, 0, 'f', 1);
    return parts.join(QStringLiteral(", "));
}

void PanelFeeder::catch_up(size_t i) {
    Slot& s = slots_[i];
    if (s.pending.empty()) return;
    const std::vector<Event> events = std::move(s.pending);
    s.pending.clear();
    timed_consume(i, events);
}

void PanelFeeder::reset() {
    tasks_.clear();  // whatever was queued would be undone by the reset anyway
    for (size_t i = 0; i < slots_.size(); ++i)
        post([this, i] {
            slots_[i].pending.clear();
            slots_[i].panel->reset();
        });
}

void PanelFeeder::select_token(uint64_t run, int64_t index) {
    for (size_t i = 0; i < slots_.size(); ++i)
        post([this, i, run, index] { slots_[i].panel->select_token(run, index); });
}

}  // namespace fluoro::ui
