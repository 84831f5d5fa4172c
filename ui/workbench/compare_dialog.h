// Chat → Compare runs: a window that puts two stored runs side by side — each picked as a
// conversation and one of its runs — with their stats (CompareStatsModel) and their token streams
// aligned by index (CompareTokenModel). Conversations are listed and loaded by the StoreWorker, so
// no SQLite I/O happens on the GUI thread.
#pragma once

#include <QDialog>
#include <array>
#include <memory>

#include "workbench/compare_model.h"
#include "workbench/store_worker.h"

class QComboBox;
class QLabel;
class QTableView;

namespace fluoro::ui {

class CompareDialog : public QDialog {
    Q_OBJECT
  public:
    explicit CompareDialog(StoreWorker* store, QWidget* parent = nullptr);

    // Re-reads the conversation list (the dialog does on construction and on show).
    void refresh();
    // Picks conversation `conversation` on both sides, with run `run_b` (a RunRecord id; -1: its
    // newest run) as B and the run before it as A ("compare with the previous run").
    void preset(qint64 conversation, qint64 run_b = -1);

    CompareTokenModel* token_model() const { return tokens_; }
    CompareStatsModel* stats_model() const { return stats_; }
    QString summary() const;
    QTableView* token_view() const { return token_view_; }

  signals:
    void compared();  // both sides picked and the models filled

  protected:
    void showEvent(QShowEvent* event) override;

  private:
    struct Side {
        QComboBox* conversation = nullptr;
        QComboBox* run = nullptr;
        ConversationPtr loaded;
        quint64 job = 0;
        qint64 want_run = -1;        // the run to pick once loaded (-1: a default)
        bool want_previous = false;  // pick the run before want_run
    };
    void on_listed(quint64 job, const ConversationList& list);
    void on_loaded(quint64 job, const ConversationPtr& c);
    void on_failed(quint64 job, const QString& message);
    void load_side(int side);
    void fill_runs(int side);
    void update_models();

    StoreWorker* store_;
    std::array<Side, 2> sides_;
    quint64 list_job_ = 0;
    qint64 preset_conversation_ = -1;
    CompareTokenModel* tokens_;
    CompareStatsModel* stats_;
    QLabel* summary_ = nullptr;
    QTableView* token_view_ = nullptr;
    QTableView* stats_view_ = nullptr;
};

}  // namespace fluoro::ui
