// The prefix cache's radix tree as one request left it (PrefixCacheEvent::tree), drawn as an
// indented tree: one row per node with its edge's text, tokens, KV bytes and how many cached
// prefixes share it; entries marked with their last-use rank; the request's path highlighted —
// edges it followed whole filled, the edge it left marked at the token where it diverged.
#pragma once

#include <QWidget>
#include <vector>

#include "telemetry/events.h"

namespace fluoro::ui {

class PrefixTreeView : public QWidget {
    Q_OBJECT
  public:
    explicit PrefixTreeView(QWidget* parent = nullptr);
    // The tree to draw (null or empty: nothing); the event must outlive the view's use of it.
    void set_event(const PrefixCacheEvent* event);
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override { return {160, 40}; }
    // Rows in drawing order: node indices of event->tree (the root is not drawn).
    const std::vector<int>& rows() const { return rows_; }
    int row_at(QPoint pos) const;     // -1: none
    QString row_text(int row) const;  // what the row says, as plain text
    QString tooltip_at(QPoint pos) const;
    // Whether the request's prompt followed at least the first token of node i's edge.
    bool on_path(int node) const;

  protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

  private:
    int row_height() const;
    const PrefixCacheEvent* ev_ = nullptr;
    std::vector<int> rows_;    // node index per row
    std::vector<int> levels_;  // nesting level per node
};

}  // namespace fluoro::ui
