// What the prompt cache panel shows, folded from RunStarted (the prompt's tokens) and
// PrefixCacheEvent (how much of it the cache supplied): one request per run, with the reused span
// [0, cached_tokens), the recomputed rest and the first diverging token. PromptCacheModel is the
// request table.
#pragma once

#include <QAbstractTableModel>
#include <optional>
#include <string>
#include <vector>

#include "telemetry/events.h"

namespace fluoro::ui {

struct PromptRequest {
    uint64_t run = 0;
    int64_t prompt_tokens = 0;
    std::vector<std::string> pieces;
    std::optional<PrefixCacheEvent> cache;  // none: the engine reported no prefix lookup
    double t_s = 0;                         // cache report time since the run started

    double hit_rate() const;  // cached / prompt tokens; 0 without a report
    // The first token the cache did not supply (== cached_tokens), or nullopt without a report or
    // when the whole prompt was reused.
    std::optional<int64_t> first_diverging() const;
};

class PromptCacheState {
  public:
    bool consume(const Event& event);
    void reset() { requests_.clear(); }

    const std::vector<PromptRequest>& requests() const { return requests_; }
    bool any_report() const;
    const PromptRequest* last_report() const;  // the latest request with a report, or null
    // Cached over prompt tokens of every reported request so far.
    double overall_hit_rate() const;

  private:
    std::vector<PromptRequest> requests_;
};

class PromptCacheModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column { Run, Prompt, Reused, Recomputed, HitRate, Diverging, Evicted, ColumnCount };
    using QAbstractTableModel::QAbstractTableModel;

    void set_state(const PromptCacheState* state);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  private:
    const PromptCacheState* state_ = nullptr;
    int rows_ = 0;
};

}  // namespace fluoro::ui
