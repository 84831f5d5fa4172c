// What the prompt inspector shows: the latest run's prompt exactly as the model saw it — the
// engine's token ids and texts (RunStarted), which of them are the vocabulary's special tokens
// (template markup; live runs only), and which chat template rendered it.
#pragma once

#include <QAbstractTableModel>
#include <QString>

#include <cstdint>
#include <string>
#include <vector>

#include "telemetry/events.h"

namespace fluoro::ui {

class PromptState {
  public:
    // True when what is shown changed.
    bool consume(const Event& event);
    void reset() { *this = PromptState(); }
    uint64_t run() const { return run_; }
    const std::vector<int32_t>& ids() const { return ids_; }
    const std::vector<std::string>& pieces() const { return pieces_; }
    bool specials_known() const { return !special_.empty(); }
    bool is_special(size_t i) const { return i < special_.size() && special_[i]; }
    bool raw() const { return raw_; }
    // The chat format that rendered it ("jinja": the file's own; or a family) and why a family
    // was used; empty for a raw prompt and for stored runs.
    const std::string& template_name() const { return template_name_; }
    const std::string& template_note() const { return template_note_; }

  private:
    uint64_t run_ = 0;
    std::vector<int32_t> ids_;
    std::vector<std::string> pieces_;
    std::vector<uint8_t> special_;
    bool raw_ = false;
    std::string template_name_, template_note_;
};

class PromptTokenModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column { Position, Id, Token, Kind, ColumnCount };
    using QAbstractTableModel::QAbstractTableModel;

    void set_state(const PromptState* state);  // resets the model

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    // DisplayRole: the cell; Qt::UserRole on Kind: true for a special token; BackgroundRole
    // marks special rows.
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  private:
    const PromptState* state_ = nullptr;
};

// The prompt as text for a QTextBrowser: each token's text HTML-escaped (newlines kept as line
// breaks, other control bytes as \xNN), special tokens in a highlighted span, and a faint border
// between tokens so their boundaries are visible.
QString prompt_html(const PromptState& state, const QPalette& palette);

}  // namespace fluoro::ui
