// What the speculative decoding panel shows, folded from SpecStep events: each verification step's
// drafted tokens classified as accepted / rejected / resampled / bonus, acceptance over the run and
// by draft position. SpecStepModel is the step table.
#pragma once

#include <QAbstractTableModel>

#include <string>
#include <vector>
#include "panels/append_only_table_model.h"

#include "panels/panel_util.h"
#include "telemetry/events.h"

namespace fluoro::ui {

enum class ChipKind { Accepted, Rejected, Resampled, Bonus };
QString chip_kind_label(ChipKind kind);
QColor chip_color(ChipKind kind, const QPalette& palette);

struct SpecChip {
    int32_t id = -1;
    ChipKind kind = ChipKind::Accepted;
    bool drafted = true;  // false: the target's own token (resampled or bonus), no q
    float q = 0, p = 0;
    int position = 0;  // 0-based draft position
};

// The tokens of one step: drafted ones in order (the first `accepted` accepted, the rest rejected),
// then the target's own token: `resampled` (drawn after a rejection) or `bonus` (after a fully
// accepted draft).
std::vector<SpecChip> spec_chips(const SpecStep& step);

struct SpecRow {
    SpecStep step;
    std::vector<SpecChip> chips;
};

class SpecState {
  public:
    bool consume(const Event& event);
    void reset() {
        const uint64_t g = generation_ + 1;
        *this = SpecState();
        generation_ = g;
    }
    // Changes whenever rows were dropped (a new run, reset): views then reset instead of append.
    uint64_t generation() const { return generation_; }

    bool active() const { return !rows_.empty(); }
    const std::vector<SpecRow>& rows() const { return rows_; }
    const TokenVocab& vocab() const { return vocab_; }
    int64_t drafted_total() const { return drafted_; }
    int64_t accepted_total() const { return accepted_; }
    double acceptance_rate() const;  // accepted / drafted over the run
    double mean_accepted() const;    // accepted drafted tokens per step
    // Per draft position i: steps that drafted a token there, and how many accepted it.
    struct Position {
        int64_t drafted = 0, accepted = 0;
        double rate() const { return drafted > 0 ? double(accepted) / double(drafted) : 0.0; }
    };
    const std::vector<Position>& by_position() const { return positions_; }

  private:
    std::vector<SpecRow> rows_;
    std::vector<Position> positions_;
    int64_t drafted_ = 0, accepted_ = 0;
    TokenVocab vocab_;
    uint64_t generation_ = 0;
};

class SpecStepModel : public AppendOnlyTableModel {
    Q_OBJECT
  public:
    enum Column { Step, Drafter, Drafted, Accepted, Target, Rate, ColumnCount };
    using AppendOnlyTableModel::AppendOnlyTableModel;

    void set_state(const SpecState* state);

    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  private:
    const SpecState* state() const { return static_cast<const SpecState*>(source()); }
};

}  // namespace fluoro::ui
