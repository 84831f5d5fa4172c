// Measure → …: the CLI's measurements in the window. Perplexity of a text, the KV-policy grid and
// the speculative-decoding benchmark run on the loaded model in the background (MeasureRunner),
// with progress and Cancel; each result is stored (the measurements table, through the
// StoreWorker, so no SQLite I/O on the GUI thread) and listed newest first. A picked result shows
// its headline, its plots (measure_plots.h: perplexity per chunk, perplexity / passkey accuracy /
// decode speed against the KV budget, NLL over position, acceptance by draft position, speedup per
// prompt set), the table the CLI prints and the JSON the CLI's --json prints; Export writes that
// JSON. Without a session store results are kept for the session only, and it says so.
#pragma once

#include <QDialog>
#include <map>
#include <optional>
#include <vector>

#include "measure/measure_plots.h"
#include "measure/measurement.h"
#include "store/records.h"
#include "workbench/store_worker.h"

class QLabel;
class QListWidget;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QTableWidget;

namespace fluoro::ui {

class MeasureRunner;

class MeasurementsDialog : public QDialog {
    Q_OBJECT
  public:
    MeasurementsDialog(StoreWorker* store, QWidget* parent = nullptr);
    ~MeasurementsDialog() override;

    // The model measurements run on (the window's loaded model); empty: none loaded.
    void set_model(const QString& path);
    // Opens the form for `kind`, then starts the measurement when the form is accepted.
    void ask(app::MeasureKind kind);
    // Starts a measurement now; false (and the reason in the status line) when one is running
    // or no model is loaded.
    bool start(app::MeasureKind kind, const app::MeasureValues& values);
    void refresh();  // re-reads the stored list

    int count() const { return int(records_.size()); }
    // The view of the shown result (nullopt: none shown, or it could not be read).
    const std::optional<app::MeasureView>& shown_view() const { return view_; }
    const app::MeasurementRecord* shown_record() const;
    QTabWidget* tabs() const { return tabs_; }
    QTableWidget* table() const { return table_; }
    QListWidget* list() const { return list_; }
    QString headline_text() const;
    QString status_text() const;
    MeasureRunner* runner() const { return runner_; }
    bool export_shown(const QString& path);

  signals:
    void measured();  // a finished measurement is stored (or kept) and shown
    void listed();    // the list was (re)filled
    void ended();     // a measurement finished, failed or was cancelled

  private:
    void on_finished(const QString& json, double seconds);
    void on_failed(const QString& message, bool cancelled);
    void on_measurements(quint64 job, const MeasurementList& list);
    void fill_list(int select_row);
    void show_row(int row);
    void set_running(bool running);

    StoreWorker* store_;
    MeasureRunner* runner_;
    QString model_;
    std::vector<app::MeasurementRecord> records_;
    std::optional<app::MeasureView> view_;
    std::map<app::MeasureKind, app::MeasureValues> last_;
    quint64 job_ = 0;
    bool select_newest_ = false;
    QLabel *model_label_, *status_, *headline_;
    QProgressBar* progress_;
    QPushButton *cancel_, *delete_, *export_;
    std::vector<QPushButton*> new_buttons_;
    QListWidget* list_;
    QTabWidget* tabs_;
    QTableWidget* table_;
    QPlainTextEdit* json_;
};

}  // namespace fluoro::ui
