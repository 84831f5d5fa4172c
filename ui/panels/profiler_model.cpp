#include "panels/profiler_model.h"

#include <algorithm>

#include "panels/panel_util.h"

namespace fluoro::ui {

QString time_part_name(TimeSplit::Part part) {
    switch (part) {
        case TimeSplit::Load:
            return QStringLiteral("load");
        case TimeSplit::Prefill:
            return QStringLiteral("prefill");
        case TimeSplit::Decode:
            return QStringLiteral("decode");
        case TimeSplit::Sampling:
            return QStringLiteral("sampling");
        case TimeSplit::Draft:
            return QStringLiteral("draft");
        case TimeSplit::Verify:
            return QStringLiteral("verify");
        case TimeSplit::Between:
            return QStringLiteral("between steps");
        case TimeSplit::PartCount:
            break;
    }
    return {};
}

bool ProfilerState::consume(const Event& event) {
    if (std::holds_alternative<RunStarted>(event)) {
        reset();
        return true;
    }
    if (const auto* s = std::get_if<StepEvent>(&event)) {
        steps_.push_back(*s);
        if (s->trace) last_traced_ = steps_.size() - 1;
        for (int64_t ns : s->op_ns) has_op_times_ |= ns > 0;
        last_t_ns_ = std::max(last_t_ns_, s->end_ns);
        return true;
    }
    if (const auto* m = std::get_if<MemoryCounters>(&event)) {
        memory_.push_back(*m);
        last_t_ns_ = std::max(last_t_ns_, m->t_ns);
        return true;
    }
    if (const auto* f = std::get_if<RunFinished>(&event)) {
        finished_ = *f;
        last_t_ns_ = std::max(last_t_ns_, f->t_ns);
        return true;
    }
    return false;
}

TimeSplit ProfilerState::split() const {
    TimeSplit s;
    for (int p = TimeSplit::Prefill; p < TimeSplit::PartCount; ++p) s.ms[size_t(p)] = 0.0;
    // Load: no event reports the model's load time (s.ms[Load] stays nullopt).
    double in_steps = 0;
    const size_t sampling = size_t(TimeCategory::Sampling);
    for (const StepEvent& e : steps_) {
        const double wall = double(std::max<int64_t>(e.end_ns - e.start_ns, 0)) * 1e-6;
        const double samp = std::min(double(e.op_ns[sampling]) * 1e-6, wall);
        TimeSplit::Part part = TimeSplit::Decode;
        switch (e.phase) {
            case StepPhase::Prefill:
                part = TimeSplit::Prefill;
                break;
            case StepPhase::Decode:
                part = TimeSplit::Decode;
                break;
            case StepPhase::Draft:
                part = TimeSplit::Draft;
                break;
            case StepPhase::Verify:
                part = TimeSplit::Verify;
                break;
        }
        *s.ms[size_t(part)] += wall - samp;
        *s.ms[TimeSplit::Sampling] += samp;
        ++s.steps[size_t(part)];
        s.tokens[size_t(part)] += e.tokens;
        if (samp > 0) ++s.steps[TimeSplit::Sampling];
        in_steps += wall;
    }
    s.total_ms = double(finished_ ? finished_->t_ns : last_t_ns_) * 1e-6;
    s.total_ms = std::max(s.total_ms, in_steps);
    s.ms[TimeSplit::Between] = s.total_ms - in_steps;
    return s;
}

void ProfileSplitModel::set_split(const TimeSplit& split) {
    // The rows are fixed; only values change.
    split_ = split;
    if (rowCount() > 0) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

int ProfileSplitModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : TimeSplit::PartCount;
}

int ProfileSplitModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ProfileSplitModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
    const auto part = TimeSplit::Part(index.row());
    const auto& ms = split_.ms[size_t(part)];
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
            case Part:
                return time_part_name(part);
            case Time:
                return ms ? format_ms(*ms) : QStringLiteral("not reported");
            case Share:
                return ms && split_.total_ms > 0 ? format_percent(*ms / split_.total_ms)
                                                 : QStringLiteral("—");
            case Steps:
                return part == TimeSplit::Load || part == TimeSplit::Between
                           ? QVariant(QStringLiteral("—"))
                           : QVariant(qlonglong(split_.steps[size_t(part)]));
            case Tokens:
                if (part == TimeSplit::Load || part == TimeSplit::Between ||
                    part == TimeSplit::Sampling)
                    return QStringLiteral("—");
                if (ms && *ms > 0 && split_.tokens[size_t(part)] > 0)
                    return QStringLiteral("%1 (%2 tok/s)")
                        .arg(split_.tokens[size_t(part)])
                        .arg(double(split_.tokens[size_t(part)]) / (*ms / 1000.0), 0, 'f', 1);
                return qlonglong(split_.tokens[size_t(part)]);
        }
    } else if (role == Qt::UserRole && index.column() == Time) {
        return ms ? QVariant(*ms) : QVariant();
    } else if (role == Qt::ToolTipRole && part == TimeSplit::Load) {
        return QStringLiteral("No engine event reports how long loading the model took");
    } else if (role == Qt::ToolTipRole && part == TimeSplit::Sampling) {
        return QStringLiteral(
            "Host time of each step outside the backend "
            "(sampling, detokenizing); needs "
            "telemetry level Full");
    } else if (role == Qt::TextAlignmentRole && index.column() != Part) {
        return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
    }
    return {};
}

QVariant ProfileSplitModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Part:
            return QStringLiteral("Where the time went");
        case Time:
            return QStringLiteral("Time");
        case Share:
            return QStringLiteral("Share");
        case Steps:
            return QStringLiteral("Steps");
        case Tokens:
            return QStringLiteral("Tokens");
    }
    return {};
}

}  // namespace fluoro::ui
