// The logit lens dock: for the picked generated token, the model's top predictions after each
// layer (engine: decode/logit_lens.h, asked for with ComputeLogitLens when a token is picked and
// the dock is on screen), as a layers × top-k table colored by probability, with the picked
// token's rank and probability per layer — where in the network the answer forms. The engine
// computes it from the live conversation's cache, so only the latest run's tokens have a lens; the
// engine's reason is shown otherwise.
#pragma once

#include "panels/event_panel.h"

class QLabel;
class QPushButton;
class QTableWidget;

namespace fluoro::ui {

class LensPanel : public EventPanel {
    Q_OBJECT
  public:
    explicit LensPanel(QWidget* parent = nullptr);

    QString panel_id() const override { return QStringLiteral("lens"); }
    QString title() const override { return QStringLiteral("Logit lens"); }
    void consume(const std::vector<Event>& batch) override;
    void reset() override;
    // Asks the engine for the token's lens now when the dock is on screen, else when it is shown.
    void select_token(uint64_t run, int64_t index) override;

    static constexpr int32_t kTopK = 8;
    const LogitLensEvent* lens() const { return lens_.get(); }
    QString headline() const;
    const QTableWidget* table() const { return table_; }
    // The token a lens is wanted for (-1: none) and whether its request is still to be sent.
    int64_t wanted_token() const { return want_token_; }
    bool request_pending() const { return pending_; }

  protected:
    // A pending request goes out when the panel is painted, i.e. on screen: a dock in a
    // background tab is "visible" to Qt without being painted.
    void paintEvent(QPaintEvent* event) override;

  private:
    void request();
    void refresh();

    uint64_t run_ = 0, want_run_ = 0;
    int64_t want_token_ = -1, last_token_ = -1;
    bool pending_ = false, finished_ = false;
    std::shared_ptr<const LogitLensEvent> lens_;
    QLabel* headline_ = nullptr;
    QPushButton* latest_ = nullptr;
    QTableWidget* table_ = nullptr;
};

}  // namespace fluoro::ui
