// The form behind Measure → Perplexity / KV cache policies / Speculative decoding: one field per
// parameter of the measurement (app/measure/measurement.h measure_params), prefilled with the
// window's defaults or the values last used, a file chooser beside the path fields, each field's
// help as its tooltip and under the form. The values go to run_measurement unchanged, which
// checks them and names the one that is wrong.
#pragma once

#include <QDialog>
#include <map>

#include "measure/measurement.h"

class QLineEdit;

namespace fluoro::ui {

class MeasureForm : public QDialog {
    Q_OBJECT
  public:
    MeasureForm(app::MeasureKind kind, const QString& model_name, const app::MeasureValues& last,
                QWidget* parent = nullptr);
    app::MeasureValues values() const;
    QLineEdit* field(const std::string& key) const;

  private:
    app::MeasureKind kind_;
    std::map<std::string, QLineEdit*> fields_;
};

}  // namespace fluoro::ui
