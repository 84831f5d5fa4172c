// Small helpers the dock panels share: token labels, byte and time formats, palette-aware colors
// (colormaps readable on light and dark backgrounds) and the "not active" notice.
#pragma once

#include <QColor>
#include <QLabel>
#include <QPalette>
#include <QResizeEvent>
#include <QSplitter>
#include <QString>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include "telemetry/events.h"

namespace fluoro::ui {

// A token's text made visible for a label: newlines, tabs and spaces shown as symbols, control
// bytes as \xNN, long pieces elided to `max_chars`.
QString piece_label(const std::string& piece, int max_chars = 24);

QString format_bytes(int64_t bytes);      // "12.3 MiB"
QString format_ms(double ms);             // "12.3 ms", "1.24 s"
QString format_percent(double fraction);  // "12.5%"

// t in [0, 1] to a perceptually ordered color (viridis): dark-to-light, so low weights read as
// "little" on both light and dark backgrounds.
QColor heat_color(double t);

bool is_dark(const QPalette& palette);
QColor kv_state_color(KvBlockState state, const QPalette& palette);
QString kv_state_label(KvBlockState state);  // "free", "used", "shared prefix", ...
QColor category_color(size_t index);         // the i-th series of a stacked chart
// Text color with enough contrast on `background`.
QColor text_on(const QColor& background);

// The token texts a run has shown so far (prompt tokens and generated ones), to label draft token
// ids and alternatives. Ids never seen are shown as "#id".
class TokenVocab {
  public:
    void add(int32_t id, const std::string& piece);
    void add_prompt(const RunStarted& run);
    void clear() { pieces_.clear(); }
    bool contains(int32_t id) const { return pieces_.count(id) != 0; }
    QString label(int32_t id, int max_chars = 24) const;

  private:
    std::unordered_map<int32_t, std::string> pieces_;
};

// A splitter that lays its widgets side by side when it is wide and stacks them when it is narrow
// (a dock can be either).
class AdaptiveSplitter : public QSplitter {
  public:
    explicit AdaptiveSplitter(int wide_from, QWidget* parent = nullptr)
        : QSplitter(Qt::Horizontal, parent), wide_from_(wide_from) {}

  protected:
    void resizeEvent(QResizeEvent* event) override {
        setOrientation(event->size().width() >= wide_from_ ? Qt::Horizontal : Qt::Vertical);
        QSplitter::resizeEvent(event);
    }

  private:
    int wide_from_;
};

// A centered, word-wrapped, muted label for honest "not active" / "nothing yet" states.
QLabel* make_notice(const QString& text, QWidget* parent);

// For a painted widget's event(): a tooltip event shows text(position) at the cursor (or hides
// the tooltip where it is empty) and returns true; any other event returns false.
bool show_hover_tooltip(QWidget* widget, QEvent* event, const std::function<QString(QPoint)>& text);

}  // namespace fluoro::ui
