// The prompt cache dock: each request's prompt as tokens with the span the prefix cache reused and
// the span recomputed, the first diverging token called out (it explains a miss), hit rate over
// requests, and the cache's contents: its radix tree as each request left it, the request's path
// through it highlighted (prefix_tree_view.h).
#pragma once

#include "panels/event_panel.h"
#include "panels/prompt_cache_model.h"

class QLabel;
class QScrollArea;
class QStackedWidget;
class QTableView;

namespace fluoro::ui {

class LineChart;
class PrefixTreeView;

// A request's prompt tokens as wrapped chips: reused, recomputed, first diverging outlined.
class PromptSpanView : public QWidget {
    Q_OBJECT
  public:
    explicit PromptSpanView(QWidget* parent = nullptr);
    void set_request(const PromptRequest* request);
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize sizeHint() const override { return {480, heightForWidth(480)}; }
    QString tooltip_at(QPoint pos) const;

  protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;

  private:
    std::vector<QRect> layout_for(int width) const;
    const PromptRequest* request_ = nullptr;
    std::vector<QString> labels_;
};

class PromptCachePanel : public EventPanel {
    Q_OBJECT
  public:
    explicit PromptCachePanel(QWidget* parent = nullptr);

    QString panel_id() const override { return QStringLiteral("prompt_cache"); }
    QString title() const override { return QStringLiteral("Prompt cache"); }
    void consume(const std::vector<Event>& batch) override;
    void reset() override;

    const PromptCacheState& state() const { return state_; }
    PromptCacheModel* request_model() const { return model_; }
    // Shows request `row` (default: the latest).
    void show_request(int row);
    int shown_request() const { return shown_; }
    QString notice() const;       // "" when requests are shown
    QString summary() const;      // the shown request's one-line explanation
    QString tree_notice() const;  // the line above the prefix tree
    const PrefixTreeView* tree_view() const { return tree_view_; }

  protected:
    void changeEvent(QEvent* event) override;

  private:
    void refresh();
    void show_tree(const PromptRequest* request);

    PromptCacheState state_;
    int shown_ = -1;
    bool follow_latest_ = true;
    QStackedWidget* stack_ = nullptr;
    QLabel* notice_ = nullptr;
    QLabel* summary_ = nullptr;
    QScrollArea* scroll_ = nullptr;
    PromptSpanView* spans_ = nullptr;
    QTableView* table_ = nullptr;
    PromptCacheModel* model_ = nullptr;
    LineChart* chart_ = nullptr;
    QLabel* tree_ = nullptr;
    PrefixTreeView* tree_view_ = nullptr;
    int rate_req_ = 0, rate_all_ = 0;
};

}  // namespace fluoro::ui
