// What the profiler panel shows, folded from StepEvent, MemoryCounters and RunFinished: every
// step's time by op category, memory over the run, and the "why is it slow" split of the run's time
// into load, prefill, decode, sampling, draft and verify. ProfileSplitModel is that split.
#pragma once

#include <QAbstractTableModel>
#include <array>
#include <optional>
#include <vector>

#include "telemetry/events.h"

namespace fluoro::ui {

struct TimeSplit {
    enum Part { Load, Prefill, Decode, Sampling, Draft, Verify, Between, PartCount };
    // Milliseconds per part; nullopt where no event reports it (load time today). A phase's time is
    // its steps' wall time less their sampling, which is its own part; Between is the run's time
    // outside any step (tokenizing, prefix lookup, waiting).
    std::array<std::optional<double>, PartCount> ms{};
    std::array<int64_t, PartCount> steps{}, tokens{};
    double total_ms = 0;  // the run's wall time so far (RunFinished, else the last event)
};
QString time_part_name(TimeSplit::Part part);

class ProfilerState {
  public:
    bool consume(const Event& event);
    void reset() { *this = ProfilerState(); }

    const std::vector<StepEvent>& steps() const { return steps_; }
    const std::vector<MemoryCounters>& memory() const { return memory_; }
    // True when some step carries op times (telemetry level Full).
    bool has_op_times() const { return has_op_times_; }
    // The last step that carries a trace (telemetry level trace), nullptr when none.
    const StepEvent* last_traced() const { return last_traced_ ? &steps_[*last_traced_] : nullptr; }
    bool finished() const { return finished_.has_value(); }
    TimeSplit split() const;

  private:
    std::vector<StepEvent> steps_;
    std::vector<MemoryCounters> memory_;
    std::optional<RunFinished> finished_;
    bool has_op_times_ = false;
    std::optional<size_t> last_traced_;
    int64_t last_t_ns_ = 0;
};

class ProfileSplitModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column { Part, Time, Share, Steps, Tokens, ColumnCount };
    using QAbstractTableModel::QAbstractTableModel;

    void set_split(const TimeSplit& split);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  private:
    TimeSplit split_;
};

}  // namespace fluoro::ui
