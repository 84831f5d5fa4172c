// Which conversation position each KV cache slot holds, derived from the KV policy's evictions
// (KvEviction): after an eviction the engine compacts the cache, so slot i holds kept[i] and tokens
// appended later follow at the next slots; before any eviction slot == position. Attention
// snapshots index keys (and queries) by slot; the heatmap maps them back through this. No Qt.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/engine_commands.h"  // KvKeepReason
#include "telemetry/events.h"

namespace fluoro::ui {

// One layout of the cache: slots [0, kept.size()) hold the kept positions (ascending), later slots
// hold next, next + 1, ... in order. The default is the identity.
class KvSlotLayout {
  public:
    int64_t position(int64_t slot) const;
    // The slot holding `pos`, nullopt when the policy evicted it.
    std::optional<int64_t> slot_of(int64_t pos) const;
    bool evicted(int64_t pos) const { return pos >= 0 && !slot_of(pos); }
    // Why `pos` is still cached (Sink, Recent, Heavy) or Evicted; nullopt for positions appended
    // after the last eviction (nothing decided about them yet).
    std::optional<KvKeepReason> reason(int64_t pos) const;
    bool identity() const { return kept_.empty() && next_ == 0; }
    // Positions below next() that the cache no longer holds.
    int64_t evicted_count() const { return next_ - int64_t(kept_.size()); }

    // The cache right after `e`.
    void apply(const KvEviction& e);
    // Sequence::truncate(n): positions from n on leave the cache; appends resume at n.
    void truncate(int64_t n);

    const std::vector<int64_t>& kept() const { return kept_; }
    int64_t next() const { return next_; }

  private:
    std::vector<int64_t> kept_;
    std::vector<KvKeepReason> reasons_;  // per kept position
    int64_t next_ = 0;
};

// The layouts of one run: the layout it started from (carried over from the conversation's previous
// run, cut where the new prompt diverged) and its evictions by step. A step's attention was
// computed after that step's evictions (the policy makes room before the append).
class KvSlotHistory {
  public:
    // A run starts. Same conversation as before: the last layout carries over (cut later by
    // set_reuse); another conversation, or none known: the identity.
    void begin_run(uint64_t conversation);
    // The prefill reused the first `reused` positions (PrefixCacheEvent): the carried layout is cut
    // there, as the engine truncates its sequence.
    void set_reuse(int64_t reused);
    void add(const KvEviction& e);
    void reset() { *this = KvSlotHistory(); }

    // The layout the attention of `step` saw: after every eviction of steps <= step.
    KvSlotLayout at_step(int64_t step) const;
    const KvSlotLayout& latest() const { return latest_; }
    const std::vector<KvEviction>& evictions() const { return evictions_; }
    bool any() const { return !evictions_.empty() || !base_.identity(); }

  private:
    void update_latest();

    uint64_t conversation_ = 0;
    KvSlotLayout carried_;               // the previous run's last layout, uncut
    KvSlotLayout base_;                  // carried_ cut where the prefill diverged
    KvSlotLayout latest_;                // base_ after the last eviction
    std::vector<KvEviction> evictions_;  // this run's, in arrival order
};

}  // namespace fluoro::ui
