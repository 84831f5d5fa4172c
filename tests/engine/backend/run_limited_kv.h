// A test cache: a contiguous cache that reports runs of at most max_run rows (0: as long as
// asked), as the paged cache does at block boundaries — so attention tests can cut the key range
// into runs anywhere.
#pragma once

#include <algorithm>

#include "kv/contiguous_kv.h"

namespace fluoro::cpu {

class RunLimitedKv final : public KvCache {
  public:
    RunLimitedKv(const KvShape& shape, int64_t max_run)
        : KvCache(shape), inner_(shape), max_run_(max_run) {}
    int64_t length(int64_t seq) const override { return inner_.length(seq); }
    void set_length(int64_t seq, int64_t n) override { inner_.set_length(seq, n); }
    int64_t capacity(int64_t seq) const override { return inner_.capacity(seq); }
    Slot k_slot(int64_t l, int64_t s, int64_t p) override { return inner_.k_slot(l, s, p); }
    Slot v_slot(int64_t l, int64_t s, int64_t p) override { return inner_.v_slot(l, s, p); }
    Run k_run(int64_t l, int64_t s, int64_t p, int64_t n) const override {
        return limit(inner_.k_run(l, s, p, n));
    }
    Run v_run(int64_t l, int64_t s, int64_t p, int64_t n) const override {
        return limit(inner_.v_run(l, s, p, n));
    }
    size_t bytes_allocated() const override { return inner_.bytes_allocated(); }

  private:
    Run limit(Run r) const {
        if (max_run_ > 0) r.rows = std::min(r.rows, max_run_);
        return r;
    }
    ContiguousKvCache inner_;
    int64_t max_run_;
};

}  // namespace fluoro::cpu
