#include "panels/spec_model.h"

#include <algorithm>

namespace fluoro::ui {

QString chip_kind_label(ChipKind kind) {
    switch (kind) {
        case ChipKind::Accepted:
            return QStringLiteral("accepted");
        case ChipKind::Rejected:
            return QStringLiteral("rejected");
        case ChipKind::Resampled:
            return QStringLiteral("resampled");
        case ChipKind::Bonus:
            return QStringLiteral("bonus");
    }
    return {};
}

QColor chip_color(ChipKind kind, const QPalette& palette) {
    const bool dark = is_dark(palette);
    switch (kind) {
        case ChipKind::Accepted:
            return dark ? QColor(56, 142, 90) : QColor(160, 220, 170);
        case ChipKind::Rejected:
            return dark ? QColor(160, 60, 60) : QColor(240, 170, 165);
        case ChipKind::Resampled:
            return dark ? QColor(176, 122, 32) : QColor(250, 205, 120);
        case ChipKind::Bonus:
            return dark ? QColor(60, 110, 180) : QColor(160, 195, 240);
    }
    return palette.color(QPalette::Button);
}

std::vector<SpecChip> spec_chips(const SpecStep& step) {
    std::vector<SpecChip> chips;
    const int accepted = std::clamp(step.accepted, 0, int(step.drafted.size()));
    for (size_t i = 0; i < step.drafted.size(); ++i) {
        const DraftToken& d = step.drafted[i];
        chips.push_back({d.id, int(i) < accepted ? ChipKind::Accepted : ChipKind::Rejected, true,
                         d.q, d.p, int(i)});
    }
    if (step.resampled >= 0)
        chips.push_back({step.resampled, ChipKind::Resampled, false, 0, 0, accepted});
    if (step.bonus >= 0) chips.push_back({step.bonus, ChipKind::Bonus, false, 0, 0, accepted});
    return chips;
}

bool SpecState::consume(const Event& event) {
    if (const auto* r = std::get_if<RunStarted>(&event)) {
        rows_.clear();
        ++generation_;
        positions_.clear();
        drafted_ = accepted_ = 0;
        vocab_.add_prompt(*r);
        return true;
    }
    if (const auto* t = std::get_if<TokenEvent>(&event)) {
        vocab_.add(t->id, t->piece);
        return false;
    }
    if (const auto* s = std::get_if<SpecStep>(&event)) {
        rows_.push_back({*s, spec_chips(*s)});
        const int accepted = std::clamp(s->accepted, 0, int(s->drafted.size()));
        drafted_ += int64_t(s->drafted.size());
        accepted_ += accepted;
        if (positions_.size() < s->drafted.size()) positions_.resize(s->drafted.size());
        for (size_t i = 0; i < s->drafted.size(); ++i) {
            ++positions_[i].drafted;
            if (int(i) < accepted) ++positions_[i].accepted;
        }
        return true;
    }
    return false;
}

double SpecState::acceptance_rate() const {
    return drafted_ > 0 ? double(accepted_) / double(drafted_) : 0.0;
}

double SpecState::mean_accepted() const {
    return rows_.empty() ? 0.0 : double(accepted_) / double(rows_.size());
}

void SpecStepModel::set_state(const SpecState* state) {
    show_rows(state, state ? state->generation() : 0, state ? int(state->rows().size()) : 0);
}

int SpecStepModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant SpecStepModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid) || !state()) return {};
    const SpecRow& r = state()->rows()[size_t(index.row())];
    const SpecStep& s = r.step;
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
            case Step:
                return qlonglong(s.step);
            case Drafter:
                return QString::fromStdString(s.drafter);
            case Drafted:
                return qlonglong(s.drafted.size());
            case Accepted:
                return s.accepted;
            case Target:
                if (s.resampled >= 0)
                    return QStringLiteral("resampled %1").arg(state()->vocab().label(s.resampled));
                if (s.bonus >= 0)
                    return QStringLiteral("bonus %1").arg(state()->vocab().label(s.bonus));
                return QStringLiteral("—");
            case Rate:
                return s.drafted.empty()
                           ? QStringLiteral("—")
                           : format_percent(double(s.accepted) / double(s.drafted.size()));
        }
    } else if (role == Qt::UserRole && index.column() == Rate) {
        return s.drafted.empty() ? 0.0 : double(s.accepted) / double(s.drafted.size());
    }
    return {};
}

QVariant SpecStepModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Step:
            return QStringLiteral("Step");
        case Drafter:
            return QStringLiteral("Drafter");
        case Drafted:
            return QStringLiteral("Drafted");
        case Accepted:
            return QStringLiteral("Accepted");
        case Target:
            return QStringLiteral("Target token");
        case Rate:
            return QStringLiteral("Acceptance");
    }
    return {};
}

}  // namespace fluoro::ui
