// What the attention panel shows, folded from the event stream without any painting: per (layer,
// head) of the current run, the query rows of its attention snapshots stacked by query position (a
// decode step brings one row; successive steps build up the query × key matrix), the latest
// sparsity stats, the labels of key positions (prompt pieces, then generated pieces) and the KV
// policy's marks on keys. Snapshots index queries and keys by cache slot; once the KV policy has
// evicted, slots are mapped back to conversation positions (kv_slot_map.h), so the composite's
// rows and columns are always positions and an evicted position is a column nobody attends to any
// more. AttentionStatsModel is the per-head sparsity table of one layer.
#pragma once

#include <QAbstractTableModel>
#include <QString>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "panels/kv_slot_map.h"
#include "telemetry/events.h"

namespace fluoro::ui {

class AttentionState {
  public:
    // Returns true when what the panel shows changed.
    bool consume(const Event& event);
    void reset();

    uint64_t run() const { return run_; }
    // Layer and head counts seen (snapshots and stats); 0 before any.
    int n_layers() const { return n_layers_; }
    int n_heads() const { return n_heads_; }
    // Query rows kept per head: the latest contiguous ones. More than the heatmap has pixel rows
    // are max-pooled there (attention_heatmap.h); the bound is memory: 256 rows of a 4096-key
    // context are 4 MiB per head.
    static constexpr size_t kMaxRows = 256;

    bool has_snapshots() const { return !heads_.empty(); }
    bool has_stats() const { return stats_.has_value(); }
    // The rows captured of (layer, head) in the current run as one snapshot: the latest contiguous
    // query rows (at most kMaxRows), keys spanning every row's keys, step of the latest; null when
    // none. Built on demand and cached until the next snapshot of that head.
    std::shared_ptr<const AttentionSnapshot> snapshot(int layer, int head) const;
    int snapshot_count() const { return int(heads_.size()); }  // heads with rows
    const AttentionStats* stats() const { return stats_ ? &*stats_ : nullptr; }
    // Stats of (layer, head) from the latest AttentionStats, when it covers them.
    const AttentionHeadStats* head_stats(int layer, int head) const;

    // Key position `pos` as text: prompt piece, then generated piece by position; "#pos" when
    // unknown. `raw` gives the piece itself (empty when unknown).
    QString key_label(int64_t pos, int max_chars = 16) const;
    // The KV policy's mark on key position `pos` (Evicted, Sink, Heavy): from the run's latest
    // KvEviction when there is one, else from the latest KvSnapshot's block states (assuming the
    // sequence's blocks in pool order hold consecutive positions).
    std::optional<KvBlockState> key_mark(int64_t pos) const;
    // The slot layouts of the current run, from its evictions.
    const KvSlotHistory& slot_history() const { return slots_; }
    int64_t prompt_tokens() const { return int64_t(prompt_pieces_.size()); }
    // Attention snapshots the stream dropped under back-pressure (DropReport), since it began.
    int64_t dropped() const { return dropped_; }

  private:
    void note_shape(int layers, int heads);

    uint64_t run_ = 0;
    int n_layers_ = 0, n_heads_ = 0;
    struct HeadRows {
        struct Row {  // as captured: query and keys by cache slot
            int64_t step = 0, query_slot = 0, key_begin = 0;
            std::vector<float> weights;
        };
        std::deque<Row> rows;  // arrival order, the latest kMaxRows
        int64_t step = 0, t_ns = 0;
        uint64_t run = 0;
        mutable std::shared_ptr<const AttentionSnapshot> composite;  // null: rebuild
    };
    static std::shared_ptr<const AttentionSnapshot> compose(int layer, int head, const HeadRows& h,
                                                            const KvSlotHistory& history);
    void drop_composites();
    std::map<std::pair<int, int>, HeadRows> heads_;
    std::optional<AttentionStats> stats_;
    std::vector<std::string> prompt_pieces_;
    std::vector<std::string> generated_;  // by TokenEvent.index
    // Per key block (block_tokens positions each), the mark of the block holding it.
    std::vector<KvBlockState> block_states_;
    int32_t block_tokens_ = 0;
    int64_t dropped_ = 0;
    KvSlotHistory slots_;
};

// Per-head sparsity readouts of one layer: rows are query heads.
class AttentionStatsModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column { Head, Entropy, TopKMass, BelowThreshold, SinkMass, ColumnCount };
    using QAbstractTableModel::QAbstractTableModel;

    // Shows `layer` of `stats` (null: nothing).
    void set_stats(const AttentionStats* stats, int layer);
    int layer() const { return layer_; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  private:
    std::vector<AttentionHeadStats> rows_;
    int layer_ = 0;
    int top_k_ = 8;
    float threshold_ = 1e-3f;
    int64_t n_keys_ = 0;
    int64_t step_ = 0;
};

}  // namespace fluoro::ui
