// The speculative decoding dock: a timeline of verification steps with each drafted token as a chip
// (accepted / rejected / resampled / bonus; hover: draft q vs target p), acceptance rate and mean
// accepted length over the run, and acceptance by draft position. Until a SpecStep arrives it says
// plainly that speculative decoding is not active.
#pragma once

#include "panels/event_panel.h"
#include "panels/spec_model.h"

class QLabel;
class QScrollArea;
class QStackedWidget;
class QTableView;

namespace fluoro::ui {

class LineChart;

class SpecTimeline : public QWidget {
    Q_OBJECT
  public:
    explicit SpecTimeline(QWidget* parent = nullptr);
    void set_state(const SpecState* state);
    QString tooltip_at(QPoint pos) const;
    QSize sizeHint() const override;

  protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;

  private:
    struct Hit {
        QRect rect;
        size_t row = 0, chip = 0;
    };
    void layout_chips();
    int row_height() const;
    const SpecState* state_ = nullptr;
    std::vector<Hit> hits_;
};

class PositionBars : public QWidget {
    Q_OBJECT
  public:
    explicit PositionBars(QWidget* parent = nullptr);
    void set_positions(std::vector<SpecState::Position> positions);
    QSize sizeHint() const override { return {240, 160}; }

  protected:
    void paintEvent(QPaintEvent* event) override;

  private:
    std::vector<SpecState::Position> positions_;
};

class SpecPanel : public EventPanel {
    Q_OBJECT
  public:
    explicit SpecPanel(QWidget* parent = nullptr);

    QString panel_id() const override { return QStringLiteral("speculative"); }
    QString title() const override { return QStringLiteral("Speculative decoding"); }
    void consume(const std::vector<Event>& batch) override;
    void reset() override;

    const SpecState& state() const { return state_; }
    SpecStepModel* step_model() const { return model_; }
    SpecTimeline* timeline() const { return timeline_; }
    QString notice() const;  // "" when active
    QString summary() const;

  protected:
    void changeEvent(QEvent* event) override;

  private:
    void refresh();
    void update_legend();

    SpecState state_;
    QStackedWidget* stack_ = nullptr;
    QLabel* notice_ = nullptr;
    QLabel* summary_ = nullptr;
    QLabel* legend_ = nullptr;
    QScrollArea* scroll_ = nullptr;
    SpecTimeline* timeline_ = nullptr;
    QTableView* table_ = nullptr;
    SpecStepModel* model_ = nullptr;
    LineChart* rate_chart_ = nullptr;
    LineChart* length_chart_ = nullptr;
    PositionBars* positions_ = nullptr;
    int rate_step_ = 0, rate_run_ = 0, len_step_ = 0, len_run_ = 0;
};

}  // namespace fluoro::ui
