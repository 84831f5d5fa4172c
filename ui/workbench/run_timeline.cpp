#include "workbench/run_timeline.h"

#include <QHBoxLayout>

#include "workbench/event_time.h"

namespace fluoro::ui {

RunTimeline::RunTimeline(QWidget* parent)
    : QWidget(parent), slider_(new QSlider(Qt::Horizontal, this)), label_(new QLabel(this)) {
    auto* lay = new QHBoxLayout(this);
    lay->setContentsMargins(6, 2, 6, 2);
    auto* name = new QLabel(tr("Run timeline"), this);
    name->setStyleSheet("font-weight: bold;");
    lay->addWidget(name);
    lay->addWidget(slider_, 1);
    lay->addWidget(label_);
    label_->setMinimumWidth(260);
    slider_->setObjectName("timeline_slider");
    slider_->setMinimumWidth(160);
    slider_->setToolTip(tr("Scrub the selected run: the panels show its events up to this point"));
    coalesce_.setSingleShot(true);
    coalesce_.setInterval(30);
    connect(&coalesce_, &QTimer::timeout, this, [this] { scrub_to(slider_->value()); });
    connect(slider_, &QSlider::valueChanged, this, [this](int v) {
        if (v != position_) coalesce_.start();
    });
    clear();
}

void RunTimeline::set_events(std::vector<Event> events, const QString& title) {
    events_ = std::move(events);
    title_ = title;
    position_ = int(events_.size());
    const QSignalBlocker block(slider_);
    slider_->setRange(0, position_);
    slider_->setValue(position_);
    slider_->setEnabled(!events_.empty());
    update_label();
}

void RunTimeline::clear() {
    set_events({}, QString());
}

void RunTimeline::scrub_to(int count) {
    coalesce_.stop();
    count = std::clamp(count, 0, int(events_.size()));
    position_ = count;
    if (slider_->value() != count) {
        const QSignalBlocker block(slider_);
        slider_->setValue(count);
    }
    update_label();
    emit scrubbed(std::vector<Event>(events_.begin(), events_.begin() + count));
}

void RunTimeline::update_label() {
    if (events_.empty()) {
        label_->setText(tr("no run selected"));
        return;
    }
    const double t_ms =
        position_ > 0 ? double(event_time_ns(events_[size_t(position_ - 1)])) / 1e6 : 0;
    int64_t tokens = 0;
    for (int i = 0; i < position_; ++i)
        if (const auto* t = std::get_if<TokenEvent>(&events_[size_t(i)]); t && t->id >= 0) ++tokens;
    label_->setText(tr("%1 · event %2/%3 · %4 ms · %5 tokens")
                        .arg(title_)
                        .arg(position_)
                        .arg(events_.size())
                        .arg(t_ms, 0, 'f', 1)
                        .arg(tokens));
}

}  // namespace fluoro::ui
