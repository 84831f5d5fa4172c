#include "panels/attention_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include "panels/attention_heatmap.h"
#include "panels/head_grid.h"
#include "panels/panel_util.h"

namespace fluoro::ui {

AttentionPanel::AttentionPanel(QWidget* parent)
    : EventPanel(parent),
      layer_box_(new QSpinBox(this)),
      head_box_(new QSpinBox(this)),
      capture_(new QPushButton(QStringLiteral("Capture layer"), this)),
      info_(new QLabel(this)),
      heat_stack_(new QStackedWidget(this)),
      heat_notice_(make_notice({}, this)),
      heatmap_(new AttentionHeatmap(this)),
      grid_(new HeadGrid(this)),
      table_(new QTableView(this)),
      stats_model_(new AttentionStatsModel(this)),
      grid_timer_(new QTimer(this)) {
    grid_timer_->setSingleShot(true);
    grid_timer_->setInterval(kGridMs);
    connect(grid_timer_, &QTimer::timeout, this, [this] {
        if (grid_pending_) refresh_grid();
    });
    for (QSpinBox* box : {layer_box_, head_box_}) {
        box->setKeyboardTracking(false);
        box->setRange(0, 0);
    }
    capture_->setToolTip(
        QStringLiteral("Ask the engine for this layer's attention (all heads, the last %1 "
                       "query rows "
                       "of each step) and the sparsity stats, from the next step on")
            .arg(kCaptureRows));
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(QStringLiteral("Layer"), this));
    bar->addWidget(layer_box_);
    bar->addWidget(new QLabel(QStringLiteral("Head"), this));
    bar->addWidget(head_box_);
    bar->addWidget(capture_);
    // Wraps rather than widening the panel (and the window) by its whole line.
    info_->setWordWrap(true);
    bar->addWidget(info_, 1);

    heat_stack_->addWidget(heat_notice_);
    heat_stack_->addWidget(heatmap_);
    table_->setModel(stats_model_);
    table_->verticalHeader()->hide();
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->setAlternatingRowColors(true);

    auto* lower = new AdaptiveSplitter(620, this);
    lower->addWidget(grid_);
    lower->addWidget(table_);
    lower->setStretchFactor(0, 3);
    lower->setStretchFactor(1, 2);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(heat_stack_);
    split->addWidget(lower);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(bar);
    layout->addWidget(split, 1);

    connect(layer_box_, &QSpinBox::valueChanged, this, &AttentionPanel::choose_layer);
    connect(head_box_, &QSpinBox::valueChanged, this, &AttentionPanel::choose_head);
    connect(capture_, &QPushButton::clicked, this, &AttentionPanel::request_capture);
    connect(grid_, &HeadGrid::head_clicked, this, &AttentionPanel::choose_head);
    connect(table_, &QTableView::clicked, this,
            [this](const QModelIndex& i) { choose_head(i.row()); });
    refresh();
}

void AttentionPanel::consume(const std::vector<Event>& batch) {
    bool changed = false;
    for (const Event& e : batch) {
        if (std::holds_alternative<RunStarted>(e)) heatmap_->set_highlight(-1);
        changed |= state_.consume(e);
    }
    if (changed) refresh();  // once per batch
}

void AttentionPanel::reset() {
    state_.reset();
    heatmap_->set_highlight(-1);
    refresh(true);
}

void AttentionPanel::select_token(uint64_t run, int64_t index) {
    if (run != state_.run() || index < 0) return;
    heatmap_->set_highlight(state_.prompt_tokens() + index);
}

void AttentionPanel::choose_layer(int layer) {
    if (layer < 0) return;
    const bool changed = layer != layer_;
    layer_ = layer;
    refresh(true);
    if (changed) request_capture();
}

void AttentionPanel::choose_head(int head) {
    if (head < 0) return;
    const bool changed = head != head_;
    head_ = head;
    refresh(true);
    if (changed) request_capture();
}

SetAttentionCapture AttentionPanel::capture_request() const {
    SetAttentionCapture c;
    AttentionCaptureSpec spec;
    spec.layer = layer_;
    spec.head = -1;  // every head: the small multiples show them all
    spec.rows = kCaptureRows;
    c.specs.push_back(spec);
    c.stats = true;
    return c;
}

void AttentionPanel::request_capture() {
    emit request_command(QStringLiteral("attention"), Command(capture_request()));
}

QString AttentionPanel::notice() const {
    return heat_stack_->currentWidget() == heat_notice_ ? heat_notice_->text() : QString();
}

void AttentionPanel::refresh_grid() {
    grid_->set_layer(&state_, layer_, head_);
    grid_pending_ = false;
    if (state_.has_snapshots()) grid_timer_->start();  // images were built: hold off the next
}

void AttentionPanel::refresh(bool grid_now) {
    {
        // Layers and heads seen so far bound the pickers; before any, any layer can be asked for.
        const QSignalBlocker b1(layer_box_), b2(head_box_);
        layer_box_->setRange(0, state_.n_layers() > 0 ? state_.n_layers() - 1 : 255);
        head_box_->setRange(0, state_.n_heads() > 0 ? state_.n_heads() - 1 : 255);
        layer_box_->setValue(layer_);
        head_box_->setValue(head_);
    }
    stats_model_->set_stats(state_.stats(), layer_);
    if (grid_now || !grid_timer_->isActive())
        refresh_grid();
    else
        grid_pending_ = true;
    auto snap = state_.snapshot(layer_, head_);
    heatmap_->set_data(snap, &state_);
    if (snap) {
        heat_stack_->setCurrentWidget(heatmap_);
    } else if (!state_.has_snapshots()) {
        heat_notice_->setText(
            QStringLiteral("No attention captured yet — pick a layer and press “Capture "
                           "layer”; the "
                           "engine sends that layer's weights from its next step.") +
            (state_.has_stats() ? QStringLiteral("\nSparsity stats below are live.") : QString()));
        heat_stack_->setCurrentWidget(heat_notice_);
    } else {
        heat_notice_->setText(QStringLiteral("No snapshot of layer %1, head %2 in this run yet — "
                                             "the captured heads are in the grid below.")
                                  .arg(layer_)
                                  .arg(head_));
        heat_stack_->setCurrentWidget(heat_notice_);
    }
    if (state_.n_layers() > 0)
        info_->setText(QStringLiteral("%1 layers × %2 heads seen · %3 heads captured")
                           .arg(state_.n_layers())
                           .arg(state_.n_heads())
                           .arg(state_.snapshot_count()));
    else
        info_->setText(QStringLiteral("no layers seen yet"));
    if (state_.dropped() > 0)
        info_->setText(
            info_->text() +
            QStringLiteral(" · %1 snapshots dropped (the view fell behind)").arg(state_.dropped()));
}

}  // namespace fluoro::ui
