// What the KV cache panel shows, folded from the event stream: the latest block pool snapshot,
// block counts by state, the memory counters over the run and the KV policy's evictions (which
// conversation positions stay cached and why, kv_slot_map.h). KvBlockTableModel lists each
// sequence's blocks (owner → blocks).
#pragma once

#include <QAbstractTableModel>
#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "panels/kv_slot_map.h"
#include "telemetry/events.h"

namespace fluoro::ui {

inline constexpr size_t kKvStates = 6;  // KvBlockState values

// One eviction's decision in numbers.
struct KvEvictionCounts {
    int64_t sinks = 0, recent = 0, heavy = 0, evicted = 0;
    int64_t kept() const { return sinks + recent + heavy; }
};
KvEvictionCounts eviction_counts(const KvEviction& e);

struct MemorySample {
    double t_s = 0;  // since the run started
    MemoryCounters counters;
};

class KvState {
  public:
    bool consume(const Event& event);
    // Forgets the run (the panels start afresh with each); the loaded model's KV facts stay.
    void reset() {
        const ModelKv m = model_kv_;
        *this = KvState();
        model_kv_ = m;
    }

    std::shared_ptr<const KvSnapshot> snapshot() const { return snapshot_; }
    int snapshots_seen() const { return snapshots_seen_; }
    // KV snapshots the stream dropped under back-pressure (DropReport), since it began.
    int64_t dropped() const { return dropped_; }
    std::array<int, kKvStates> state_counts() const;
    const std::vector<MemorySample>& memory() const { return memory_; }
    const MemoryCounters* last_memory() const {
        return memory_.empty() ? nullptr : &memory_.back().counters;
    }

    // The current run's evictions, oldest first, and the cache layout they leave.
    const std::vector<KvEviction>& evictions() const { return slots_.evictions(); }
    const KvEviction* last_eviction() const {
        return evictions().empty() ? nullptr : &evictions().back();
    }
    const KvSlotHistory& slot_history() const { return slots_; }
    // Conversation positions known so far: the prompt, the tokens generated, and every position
    // an eviction decided about.
    int64_t positions() const;
    // Positions the cache no longer holds, and the bytes that spares at the latest snapshot's
    // bytes per token (0 before any snapshot).
    int64_t evicted_positions() const { return slots_.latest().evicted_count(); }
    int64_t bytes_saved() const;
    // How the sliding-window layers store their rows, from the engine's ModelLoaded and the
    // latest MemoryCounters (the allocation changes when an evicting policy rebuilds the cache
    // to keep every row): "" for a model without such layers.
    QString window_storage() const;

  private:
    std::shared_ptr<const KvSnapshot> snapshot_;
    int snapshots_seen_ = 0;
    int64_t dropped_ = 0;
    std::vector<MemorySample> memory_;
    KvSlotHistory slots_;
    int64_t prompt_tokens_ = 0, generated_ = 0;
    struct ModelKv {  // the loaded model's (ModelLoaded)
        int64_t window = 0, kv_bytes = 0, kv_bytes_if_full = 0;
        std::string window_note;
    } model_kv_;
};

class KvBlockTableModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column { Sequence, Blocks, Tokens, Bytes, States, BlockIds, ColumnCount };
    using QAbstractTableModel::QAbstractTableModel;

    void set_snapshot(const KvSnapshot* snapshot);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  private:
    struct Row {
        int32_t owner = -1;
        std::vector<int32_t> blocks;  // pool indices, in pool order
        int64_t tokens = 0;
        std::array<int, kKvStates> states{};
    };
    std::vector<Row> rows_;
    int64_t bytes_per_token_ = 0;
};

// "0–5, 9, 12–13": pool indices as ranges.
QString block_ranges(const std::vector<int32_t>& blocks);

}  // namespace fluoro::ui
