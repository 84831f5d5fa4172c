// Builds a RunRecord from a live event stream, in memory — what `fluoro trace` exports without
// going through the database. Feed it every event; it keeps those of the first run it sees.
#pragma once

#include "store/records.h"

namespace fluoro::app {

class RunCollector {
  public:
    void add(const Event& e);
    bool finished() const { return finished_; }
    const RunRecord& run() const { return run_; }

  private:
    uint64_t engine_run_ = 0;
    bool finished_ = false;
    RunRecord run_;
};

}  // namespace fluoro::app
