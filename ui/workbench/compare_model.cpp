#include "workbench/compare_model.h"

#include <QBrush>
#include <QColor>
#include <QFont>
#include <cmath>

#include "compare/run_compare.h"
#include "panels/panel_util.h"

namespace fluoro::ui {

CompareRun compare_run(const app::RunRecord& run, const QString& label) {
    CompareRun c;
    c.label = label;
    c.run.id = run.id;
    c.run.message_id = run.message_id;
    c.run.kind = run.kind;
    c.run.model_path = run.model_path;
    c.run.model_name = run.model_name;
    c.run.model_sha256 = run.model_sha256;
    c.run.settings_json = run.settings_json;
    c.run.hardware_json = run.hardware_json;
    c.run.program_version = run.program_version;
    c.run.telemetry_level = run.telemetry_level;
    c.run.started_at = run.started_at;
    c.run.prompt_tokens = run.prompt_tokens;
    c.run.stop_reason = run.stop_reason;
    c.run.error = run.error;
    c.run.n_tokens = run.n_tokens;
    c.run.cached_tokens = run.cached_tokens;
    c.run.computed_tokens = run.computed_tokens;
    c.run.decode_steps = run.decode_steps;
    c.run.prefill_ms = run.prefill_ms;
    c.run.ttft_ms = run.ttft_ms;
    c.run.decode_ms = run.decode_ms;
    c.run.duration_ns = run.duration_ns;
    c.run.drafted_tokens = run.drafted_tokens;
    c.run.accepted_tokens = run.accepted_tokens;
    c.run.tokens = run.tokens;
    c.run.steps = run.steps;  // the time per operation category
    return c;
}

// --- tokens ---

void CompareTokenModel::set_runs(std::shared_ptr<const CompareRun> a,
                                 std::shared_ptr<const CompareRun> b) {
    beginResetModel();
    a_ = std::move(a);
    b_ = std::move(b);
    first_divergence_.reset();
    const int n = rowCount();
    for (int i = 0; i < n; ++i)
        if (diverged(i)) {
            first_divergence_ = i;
            break;
        }
    endResetModel();
}

void CompareTokenModel::clear() {
    set_runs(nullptr, nullptr);
}

std::optional<double> CompareTokenModel::probability(const TokenEvent& t) {
    if (t.id < 0) return std::nullopt;  // flushed text: no probabilities
    return std::exp(double(t.logprob));
}

std::optional<double> CompareTokenModel::latency_ms(const std::vector<TokenEvent>& tokens,
                                                    size_t i) {
    if (i >= tokens.size()) return std::nullopt;
    const int64_t prev = i == 0 ? 0 : tokens[i - 1].t_ns;
    return double(tokens[i].t_ns - prev) * 1e-6;
}

const TokenEvent* CompareTokenModel::token(int side, int row) const {
    const auto& run = side == 0 ? a_ : b_;
    if (!run || row < 0 || size_t(row) >= run->run.tokens.size()) return nullptr;
    return &run->run.tokens[size_t(row)];
}

bool CompareTokenModel::diverged(int row) const {
    const TokenEvent* a = token(0, row);
    const TokenEvent* b = token(1, row);
    if (!a || !b) return true;
    return a->id != b->id || a->piece != b->piece;
}

int CompareTokenModel::diverged_count() const {
    int n = 0;
    for (int i = 0; i < rowCount(); ++i) n += diverged(i) ? 1 : 0;
    return n;
}

QString CompareTokenModel::summary() const {
    if (!a_ || !b_) return tr("Pick two runs to compare.");
    const int na = int(a_->run.tokens.size()), nb = int(b_->run.tokens.size());
    if (!first_divergence_) return tr("Identical token streams (%n tokens).", nullptr, na);
    const int i = *first_divergence_;
    const TokenEvent* a = token(0, i);
    const TokenEvent* b = token(1, i);
    const QString ta = a ? QStringLiteral("“%1”").arg(piece_label(a->piece)) : tr("(ended)");
    const QString tb = b ? QStringLiteral("“%1”").arg(piece_label(b->piece)) : tr("(ended)");
    return tr("Same first %1 tokens; diverge at token %2: %3 (A) vs %4 (B). %5 of %6 aligned "
              "positions differ (A: %7 tokens, B: %8).")
        .arg(i)
        .arg(i)
        .arg(ta, tb)
        .arg(diverged_count())
        .arg(rowCount())
        .arg(na)
        .arg(nb);
}

int CompareTokenModel::rowCount(const QModelIndex& parent) const {
    if (parent.isValid()) return 0;
    const size_t na = a_ ? a_->run.tokens.size() : 0, nb = b_ ? b_->run.tokens.size() : 0;
    return int(std::max(na, nb));
}

int CompareTokenModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

std::optional<double> CompareTokenModel::value(int row, int column) const {
    const auto prob = [&](int side) -> std::optional<double> {
        const TokenEvent* t = token(side, row);
        return t ? probability(*t) : std::nullopt;
    };
    const auto lat = [&](int side) -> std::optional<double> {
        const auto& run = side == 0 ? a_ : b_;
        return run ? latency_ms(run->run.tokens, size_t(row)) : std::nullopt;
    };
    switch (column) {
        case Index:
            return double(row);
        case ProbA:
            return prob(0);
        case ProbB:
            return prob(1);
        case LatencyA:
            return lat(0);
        case LatencyB:
            return lat(1);
        case ProbDiff: {
            const auto a = prob(0), b = prob(1);
            if (a && b) return *b - *a;
            return std::nullopt;
        }
        case LatencyDiff: {
            const auto a = lat(0), b = lat(1);
            if (a && b) return *b - *a;
            return std::nullopt;
        }
        default:
            return std::nullopt;
    }
}

QVariant CompareTokenModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
    const int row = index.row(), col = index.column();
    if (role == DivergedRole) return diverged(row);
    if (role == ValueRole) {
        const auto v = value(row, col);
        return v ? QVariant(*v) : QVariant();
    }
    if (role == Qt::DisplayRole) {
        if (col == TokenA || col == TokenB) {
            const TokenEvent* t = token(col == TokenA ? 0 : 1, row);
            return t ? piece_label(t->piece) : QString();
        }
        if (col == Index) return row;
        const auto v = value(row, col);
        if (!v)
            return token(col <= LatencyA ? 0 : 1, row) || col >= ProbDiff ? QStringLiteral("—")
                                                                          : QString();
        switch (col) {
            case ProbA:
            case ProbB:
                return QString::number(*v, 'f', 3);
            case LatencyA:
            case LatencyB:
                return QString::number(*v, 'f', 1);
            case ProbDiff:
                return QString::asprintf("%+.3f", *v);
            case LatencyDiff:
                return QString::asprintf("%+.1f", *v);
        }
        return {};
    }
    if (role == Qt::BackgroundRole && diverged(row)) {
        // The first divergence stronger than the rows after it.
        const bool first = first_divergence_ && *first_divergence_ == row;
        return QBrush(QColor(230, 120, 60, first ? 150 : 55));
    }
    if (role == Qt::FontRole && (col == TokenA || col == TokenB)) {
        QFont f(QStringLiteral("monospace"));
        f.setStyleHint(QFont::Monospace);
        return f;
    }
    if (role == Qt::ToolTipRole) {
        if (first_divergence_ && *first_divergence_ == row)
            return tr("First divergence: the runs chose different tokens here");
        if (diverged(row)) return tr("The runs differ at this position");
        return {};
    }
    if (role == Qt::TextAlignmentRole && col != TokenA && col != TokenB)
        return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
    return {};
}

QVariant CompareTokenModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal) return {};
    if (role == Qt::ToolTipRole) {
        switch (section) {
            case ProbA:
            case ProbB:
                return tr("Probability of the chosen token (post-penalty, pre-truncation)");
            case LatencyA:
            case LatencyB:
                return tr(
                    "Time since the previous token (the first token: since the run "
                    "started), from the token events");
            case ProbDiff:
            case LatencyDiff:
                return tr("Run B minus run A at the same index");
        }
        return {};
    }
    if (role != Qt::DisplayRole) return {};
    switch (section) {
        case Index:
            return tr("#");
        case TokenA:
            return tr("A token");
        case ProbA:
            return tr("A p");
        case LatencyA:
            return tr("A ms");
        case TokenB:
            return tr("B token");
        case ProbB:
            return tr("B p");
        case LatencyB:
            return tr("B ms");
        case ProbDiff:
            return tr("Δp (B−A)");
        case LatencyDiff:
            return tr("Δms (B−A)");
    }
    return {};
}

// --- stats ---

void CompareStatsModel::set_runs(std::shared_ptr<const CompareRun> a,
                                 std::shared_ptr<const CompareRun> b) {
    beginResetModel();
    rows_.clear();
    label_a_ = a ? a->label : QString();
    label_b_ = b ? b->label : QString();
    if (a && b) {
        // The figures and settings as app/compare computes them for `fluoro compare`, then the
        // time per token of each operation category that either run recorded, and of each op
        // (every layer summed) when both runs were traced.
        const app::RunComparison c = app::compare_runs(a->run, b->run);
        rows_.push_back({tr("run"), a->label, b->label, std::nullopt, std::nullopt, {}});
        for (const app::CompareStat& st : c.stats)
            rows_.push_back({QString::fromStdString(st.name), QString::fromStdString(st.text_a),
                             QString::fromStdString(st.text_b), st.a, st.b,
                             QString::fromStdString(st.unit)});
        const auto us = [](double v) { return QString::number(v, 'f', 1) + " µs"; };
        for (const app::ComparePhase& p : c.phases)
            for (const app::CompareOp& op : p.ops) {
                if (op.us_a == 0 && op.us_b == 0) continue;
                rows_.push_back(
                    {QStringLiteral("%1 %2 µs/token")
                         .arg(QString::fromStdString(p.phase), QString::fromStdString(op.category)),
                     us(op.us_a), us(op.us_b), op.us_a, op.us_b, QStringLiteral("µs")});
            }
        for (const app::ComparePhase& p : c.phases)
            for (const app::CompareOp& op : p.named_ops)
                rows_.push_back(
                    {QStringLiteral("%1 op %2 µs/token")
                         .arg(QString::fromStdString(p.phase), QString::fromStdString(op.category)),
                     us(op.us_a), us(op.us_b), op.us_a, op.us_b, QStringLiteral("µs")});
    }
    endResetModel();
}

void CompareStatsModel::clear() {
    set_runs(nullptr, nullptr);
}

int CompareStatsModel::row_of(const QString& stat) const {
    for (size_t i = 0; i < rows_.size(); ++i)
        if (rows_[i].name == stat) return int(i);
    return -1;
}

int CompareStatsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(rows_.size());
}

int CompareStatsModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant CompareStatsModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
    const Row& r = rows_[size_t(index.row())];
    const bool differs = r.a != r.b;
    if (role == DiffersRole) return differs;
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
            case Stat:
                return r.name;
            case RunA:
                return r.a;
            case RunB:
                return r.b;
            case Diff:
                if (r.va && r.vb) {
                    const double d = *r.vb - *r.va;
                    QString s = QString::asprintf("%+.1f", d);
                    if (*r.va != 0) s += QString::asprintf(" (%+.0f%%)", 100.0 * d / *r.va);
                    return r.unit.isEmpty() ? s : s + QLatin1Char(' ') + r.unit;
                }
                return differs ? tr("differs") : QString();
        }
        return {};
    }
    if (role == Qt::UserRole && r.va && r.vb && index.column() == Diff) return *r.vb - *r.va;
    if (role == Qt::FontRole && differs) {
        QFont f;
        f.setBold(true);
        return f;
    }
    if (role == Qt::ToolTipRole && (index.column() == RunA || index.column() == RunB))
        return index.column() == RunA ? r.a : r.b;
    return {};
}

QVariant CompareStatsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Stat:
            return QString();
        case RunA:
            return tr("Run A");
        case RunB:
            return tr("Run B");
        case Diff:
            return tr("B − A");
    }
    return {};
}

}  // namespace fluoro::ui
