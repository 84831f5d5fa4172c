// Compare runs: two stored runs side by side. CompareTokenModel aligns their generated tokens by
// index (row i: token i of run A and of run B), marks where the streams diverge, and gives the
// per-token probability (exp of TokenEvent.logprob) and latency (TokenEvent.t_ns since the
// previous token; the first token: since the run started) of each side with their differences
// B − A. CompareStatsModel lists each run's model, settings (RunRecord.settings_json and
// hardware_json, key by key), figures (TTFT, prompt and decode tok/s, tokens, stop reason) and
// time per token of each operation category — app::compare_runs's rows, as `fluoro compare`
// prints them — the rows that differ marked. Both only rearrange the runs' recorded numbers.
#pragma once

#include <QAbstractTableModel>
#include <QString>
#include <QStringList>
#include <memory>
#include <optional>
#include <vector>

#include "store/records.h"

namespace fluoro::ui {

// What a comparison keeps of a run: its header, figures, steps and tokens (no snapshots).
struct CompareRun {
    QString label;  // e.g. "run 12 · Why is the sky blue?"
    app::RunRecord run;
};
// Copies what the comparison needs of `run` (the snapshots and counters are left out).
CompareRun compare_run(const app::RunRecord& run, const QString& label);

class CompareTokenModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column {
        Index,
        TokenA,
        ProbA,
        LatencyA,
        TokenB,
        ProbB,
        LatencyB,
        ProbDiff,     // B − A, where both sides have a probability
        LatencyDiff,  // B − A, ms
        ColumnCount
    };
    enum Role {
        DivergedRole =
            Qt::UserRole + 1,  // bool: the tokens at this index differ (or one is missing)
        ValueRole,             // the cell's number (double) where it has one
    };
    using QAbstractTableModel::QAbstractTableModel;

    void set_runs(std::shared_ptr<const CompareRun> a, std::shared_ptr<const CompareRun> b);
    void clear();

    // The first index whose tokens differ (or where one run has ended); nullopt: identical.
    std::optional<int> first_divergence() const { return first_divergence_; }
    int diverged_count() const;  // rows whose tokens differ
    // One line: "identical token streams (N tokens)" or "diverge at token i: 'x' vs 'y' …".
    QString summary() const;

    // Per-token figures; nullopt where the run has no such token or no probability (flushed text).
    static std::optional<double> probability(const TokenEvent& t);
    static std::optional<double> latency_ms(const std::vector<TokenEvent>& tokens, size_t i);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  private:
    const TokenEvent* token(int side, int row) const;
    std::optional<double> value(int row, int column) const;
    bool diverged(int row) const;

    std::shared_ptr<const CompareRun> a_, b_;
    std::optional<int> first_divergence_;
};

class CompareStatsModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    enum Column { Stat, RunA, RunB, Diff, ColumnCount };
    enum Role { DiffersRole = Qt::UserRole + 1 };  // bool: the two runs' values differ
    using QAbstractTableModel::QAbstractTableModel;

    void set_runs(std::shared_ptr<const CompareRun> a, std::shared_ptr<const CompareRun> b);
    void clear();
    // The row of a stat by its name ("TTFT", "decode tok/s", "temperature", …); -1 if absent.
    int row_of(const QString& stat) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  private:
    struct Row {
        QString name;
        QString a, b;
        std::optional<double> va, vb;  // numbers, for the difference
        QString unit;                  // of the difference
    };
    std::vector<Row> rows_;
    QString label_a_, label_b_;
};

}  // namespace fluoro::ui
