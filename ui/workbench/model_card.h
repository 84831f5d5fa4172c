// The model card: what app/report's model_report_json says of a GGUF file (architecture,
// parameters, quantization mix, context, KV bytes per token), read on a pool thread.
#pragma once

#include <QLabel>
#include <filesystem>

namespace fluoro::ui {

class ModelCard : public QLabel {
    Q_OBJECT
  public:
    explicit ModelCard(QWidget* parent = nullptr);
    // Reads the report off the GUI thread; shows it (or the reason it failed) when done.
    void show_model(const std::filesystem::path& model);
    void clear_model();
    // A remote server's model: only what the server says (its URL and the model's id).
    void show_remote(const QString& url, const QString& model);

  signals:
    void card_ready();

  private:
    quint64 job_ = 0;
};

// The card's rich text from a model report (model_report.h's JSON, as text).
QString model_card_html(const std::string& report_json);

}  // namespace fluoro::ui
