#include "panels/kv_slot_map.h"

#include <algorithm>

namespace fluoro::ui {

int64_t KvSlotLayout::position(int64_t slot) const {
    if (slot < 0) return slot;
    if (size_t(slot) < kept_.size()) return kept_[size_t(slot)];
    return next_ + (slot - int64_t(kept_.size()));
}

std::optional<int64_t> KvSlotLayout::slot_of(int64_t pos) const {
    if (pos >= next_) return int64_t(kept_.size()) + (pos - next_);
    const auto it = std::lower_bound(kept_.begin(), kept_.end(), pos);
    if (it == kept_.end() || *it != pos) return std::nullopt;
    return int64_t(it - kept_.begin());
}

std::optional<KvKeepReason> KvSlotLayout::reason(int64_t pos) const {
    if (pos >= next_ || pos < 0) return std::nullopt;
    const auto it = std::lower_bound(kept_.begin(), kept_.end(), pos);
    if (it == kept_.end() || *it != pos) return KvKeepReason::Evicted;
    return reasons_[size_t(it - kept_.begin())];
}

void KvSlotLayout::apply(const KvEviction& e) {
    kept_ = e.kept;
    std::sort(kept_.begin(), kept_.end());  // ascending by contract; a bad event stays usable
    reasons_.assign(kept_.size(), KvKeepReason::Recent);
    for (size_t i = 0; i < e.reasons.size() && i < reasons_.size(); ++i)
        if (e.reasons[i] <= uint8_t(KvKeepReason::Evicted))
            reasons_[i] = KvKeepReason(e.reasons[i]);
    // Everything cached before took part: appends continue after the last of them.
    int64_t last = -1;
    if (!e.kept.empty()) last = std::max(last, *std::max_element(e.kept.begin(), e.kept.end()));
    if (!e.evicted.empty())
        last = std::max(last, *std::max_element(e.evicted.begin(), e.evicted.end()));
    next_ = last + 1;
}

void KvSlotLayout::truncate(int64_t n) {
    if (identity() || n < 0) return;
    const auto cut = std::lower_bound(kept_.begin(), kept_.end(), n);
    reasons_.resize(size_t(cut - kept_.begin()));
    kept_.erase(cut, kept_.end());
    for (int64_t p = next_; p < n; ++p) {  // appended after the eviction, below the cut
        kept_.push_back(p);
        reasons_.push_back(KvKeepReason::Recent);
    }
    next_ = n;
    if (int64_t(kept_.size()) == n) *this = KvSlotLayout();  // nothing evicted below the cut
}

void KvSlotHistory::begin_run(uint64_t conversation) {
    const bool same = conversation != 0 && conversation == conversation_;
    carried_ = same ? latest_ : KvSlotLayout();
    conversation_ = conversation;
    base_ = carried_;
    evictions_.clear();
    update_latest();
}

void KvSlotHistory::set_reuse(int64_t reused) {
    base_ = carried_;
    base_.truncate(reused);
    update_latest();
}

void KvSlotHistory::add(const KvEviction& e) {
    evictions_.push_back(e);
    update_latest();
}

void KvSlotHistory::update_latest() {
    latest_ = base_;
    if (!evictions_.empty()) latest_.apply(evictions_.back());
}

KvSlotLayout KvSlotHistory::at_step(int64_t step) const {
    // Evictions arrive in step order; the last one at or before `step` decides.
    const KvEviction* last = nullptr;
    for (const KvEviction& e : evictions_)
        if (e.step <= step) last = &e;
    KvSlotLayout l = base_;
    if (last) l.apply(*last);
    return l;
}

}  // namespace fluoro::ui
