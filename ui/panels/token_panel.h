// The token inspector dock: the run's generated tokens; picking one (here or elsewhere through
// select_token) shows its probability and the top-N alternatives as bars.
#pragma once

#include "panels/event_panel.h"
#include "panels/token_model.h"

class QLabel;
class QTableView;

namespace fluoro::ui {

// Horizontal bars of an alternatives model: token, probability, the chosen one highlighted.
class AlternativeBars : public QWidget {
    Q_OBJECT
  public:
    explicit AlternativeBars(const TokenAlternativesModel* model, QWidget* parent = nullptr);
    QSize sizeHint() const override;

  protected:
    void paintEvent(QPaintEvent* event) override;

  private:
    const TokenAlternativesModel* model_;
};

class TokenPanel : public EventPanel {
    Q_OBJECT
  public:
    explicit TokenPanel(QWidget* parent = nullptr);

    QString panel_id() const override { return QStringLiteral("tokens"); }
    QString title() const override { return QStringLiteral("Token inspector"); }
    void consume(const std::vector<Event>& batch) override;
    void reset() override;
    void select_token(uint64_t run, int64_t index) override;

    const TokenState& state() const { return state_; }
    TokenListModel* token_model() const { return list_; }
    TokenAlternativesModel* alternatives_model() const { return alternatives_; }
    QTableView* token_view() const { return view_; }
    int64_t selected_index() const { return selected_; }  // -1: none
    QString detail() const;                               // the picked token's headline

  private:
    void refresh();
    void show_row(int row);

    TokenState state_;
    int64_t selected_ = -1;
    int64_t pending_ = -1;  // select_token for a token not yet arrived
    bool programmatic_ = false;
    QTableView* view_ = nullptr;
    TokenListModel* list_ = nullptr;
    TokenAlternativesModel* alternatives_ = nullptr;
    QLabel* detail_ = nullptr;
    AlternativeBars* bars_ = nullptr;
    QLabel* note_ = nullptr;
};

}  // namespace fluoro::ui
