// What the token inspector shows: the run's generated tokens (TokenListModel) and, for the one
// picked, its probability and top-N alternatives (TokenAlternativesModel). The probabilities are
// the engine's: after penalties and temperature, before top-k/top-p/min-p truncation.
#pragma once

#include <QAbstractTableModel>

#include <vector>
#include "panels/append_only_table_model.h"

#include "panels/panel_util.h"
#include "telemetry/events.h"

namespace fluoro::ui {

class TokenState {
  public:
    bool consume(const Event& event);
    void reset() {
        const uint64_t g = generation_ + 1;
        *this = TokenState();
        generation_ = g;
    }

    uint64_t run() const { return run_; }
    const std::vector<TokenEvent>& tokens() const { return tokens_; }
    // Row of token `index`, -1 when not (yet) here.
    int row_of(int64_t index) const;
    const TokenVocab& vocab() const { return vocab_; }
    uint64_t generation() const { return generation_; }
    // The run is a remote server's (RunStarted::backend "remote"): its ids are the attachment's
    // numbering of the texts, its probabilities the server's top_logprobs.
    bool remote() const { return remote_; }

  private:
    uint64_t run_ = 0;
    bool remote_ = false;
    std::vector<TokenEvent> tokens_;
    TokenVocab vocab_;
    uint64_t generation_ = 0;
};

class TokenListModel : public AppendOnlyTableModel {
    Q_OBJECT
  public:
    enum Column { Index, Token, Probability, LogProb, Time, ColumnCount };
    using AppendOnlyTableModel::AppendOnlyTableModel;

    void set_state(const TokenState* state);

    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  private:
    const TokenState* state() const { return static_cast<const TokenState*>(source()); }
};

class TokenAlternativesModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column { Rank, Token, Probability, Chosen, ColumnCount };
    using QAbstractTableModel::QAbstractTableModel;

    // Shows `token`'s alternatives (null: none); `vocab` names their ids.
    void set_token(const TokenEvent* token, const TokenVocab* vocab);
    int32_t chosen_id() const { return chosen_; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  private:
    std::vector<TokenProb> top_;
    std::vector<QString> labels_;
    int32_t chosen_ = -1;
};

}  // namespace fluoro::ui
