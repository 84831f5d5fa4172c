// The attention overview dock: every layer × head of the picked token at once (engine:
// ComputeAttentionOverview, asked for when a token is picked and the dock is on screen), one glyph
// per head — its pattern's letter on the pattern's color (induction, previous-token, self, sink,
// local, diffuse, mixed; telemetry/attention_patterns.h says how the engine names them), hover:
// every mass. A click shows that head's row over all the keys below, max-pooled over key blocks
// when there are more keys than pixels, the exact weight and token of each key on hover.
#pragma once

#include "panels/event_panel.h"

class QLabel;

namespace fluoro::ui {

// layers (rows) × heads (columns) of glyphs.
class HeadPatternGrid : public QWidget {
    Q_OBJECT
  public:
    explicit HeadPatternGrid(QWidget* parent = nullptr);
    void set_overview(const AttentionOverview* ov, int layer, int head);
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override { return {120, 80}; }
    std::pair<int, int> cell_at(QPoint pos) const;  // (layer, head); (-1, -1) outside
    QString tooltip_at(QPoint pos) const;

  signals:
    void head_clicked(int layer, int head);

  protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    bool event(QEvent* event) override;

  private:
    QRect grid_rect() const;
    const AttentionOverview* ov_ = nullptr;
    int layer_ = -1, head_ = -1;
};

// One head's row over keys 0..position, max-pooled into the pixels available.
class KeyStrip : public QWidget {
    Q_OBJECT
  public:
    explicit KeyStrip(QWidget* parent = nullptr);
    void set_row(const AttentionOverview* ov, int layer, int head);
    QSize sizeHint() const override { return {480, 64}; }
    QSize minimumSizeHint() const override { return {120, 48}; }
    // The keys [first, last] the pixel column at x shows, and the most attended of them.
    struct Block {
        int64_t first = -1, last = -1, max_key = -1;
        float max = 0;
    };
    Block block_at(int x) const;
    QString tooltip_at(QPoint pos) const;

  protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

  private:
    QRect bar_rect() const;
    const AttentionOverview* ov_ = nullptr;
    int layer_ = -1, head_ = -1;
};

class OverviewPanel : public EventPanel {
    Q_OBJECT
  public:
    explicit OverviewPanel(QWidget* parent = nullptr);

    QString panel_id() const override { return QStringLiteral("overview"); }
    QString title() const override { return QStringLiteral("All layers"); }
    void consume(const std::vector<Event>& batch) override;
    void reset() override;
    void select_token(uint64_t run, int64_t index) override;

    const AttentionOverview* overview() const { return ov_.get(); }
    QString headline() const;
    QString detail() const;  // the clicked head's line
    void choose_head(int layer, int head);
    const HeadPatternGrid* grid() const { return grid_; }
    const KeyStrip* strip() const { return strip_; }
    bool request_pending() const { return pending_; }

  protected:
    // A pending request goes out when the panel is painted, i.e. on screen: a dock in a
    // background tab is "visible" to Qt without being painted.
    void paintEvent(QPaintEvent* event) override;

  private:
    void request();
    void refresh();

    uint64_t want_run_ = 0;
    int64_t want_token_ = -1;
    bool pending_ = false;
    int layer_ = -1, head_ = -1;
    std::shared_ptr<const AttentionOverview> ov_;
    QLabel* headline_ = nullptr;
    QLabel* legend_ = nullptr;
    HeadPatternGrid* grid_ = nullptr;
    QLabel* detail_ = nullptr;
    KeyStrip* strip_ = nullptr;
};

}  // namespace fluoro::ui
