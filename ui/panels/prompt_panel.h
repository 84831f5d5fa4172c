// The prompt inspector dock: the latest run's prompt exactly as the model saw it — the text
// token by token with the template's special tokens highlighted (hover: position and id), and a
// table of positions, ids and texts. Says which chat template rendered it.
#pragma once

#include "panels/event_panel.h"
#include "panels/prompt_model.h"

class QLabel;
class QTableView;
class QTextBrowser;

namespace fluoro::ui {

class PromptPanel : public EventPanel {
    Q_OBJECT
  public:
    explicit PromptPanel(QWidget* parent = nullptr);

    QString panel_id() const override { return QStringLiteral("prompt"); }
    QString title() const override { return QStringLiteral("Prompt inspector"); }
    void consume(const std::vector<Event>& batch) override;
    void reset() override;

    const PromptState& state() const { return state_; }
    PromptTokenModel* token_model() const { return model_; }
    QString headline() const;
    QString prompt_text_html() const;  // what the text view shows

  private:
    void refresh();

    PromptState state_;
    QLabel* headline_ = nullptr;
    QTextBrowser* text_ = nullptr;
    QTableView* table_ = nullptr;
    PromptTokenModel* model_ = nullptr;
    QString html_;
};

}  // namespace fluoro::ui
