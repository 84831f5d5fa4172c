// Chat → Prompt cache advisor: the prompt-order advisor (`fluoro cache advise`) over the
// requests stored in the session database — what they share, where they diverge, the cache
// breakers with a fix each and the hit rate with stable content first. The report is computed by
// the app layer on the StoreWorker's thread; this dialog only asks and shows it.
#pragma once

#include <QDialog>

class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QSpinBox;

namespace fluoro::ui {

class StoreWorker;

class AdvisorDialog : public QDialog {
    Q_OBJECT
  public:
    explicit AdvisorDialog(StoreWorker* store, QWidget* parent = nullptr);

    // Filters the requests by model (a substring of its path or name) and asks for the report.
    void set_model(const QString& model);
    void refresh();
    QString report() const;
    QString status() const;

  signals:
    void reported();  // the report (or an error) arrived

  private:
    StoreWorker* store_;
    QLineEdit* model_;
    QSpinBox* last_;
    QLabel* status_;
    QPlainTextEdit* text_;
    quint64 job_ = 0;
};

}  // namespace fluoro::ui
