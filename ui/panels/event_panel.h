// The contract between the workbench window (ui/workbench) and its dock panels (ui/panels): a
// panel is a widget fed the engine's telemetry events (engine/telemetry/events.h) in order, on
// the GUI thread, in batches coalesced to at most 60 per second. Live runs and replayed runs
// arrive the same way, so a panel cannot tell them apart. A panel computes no inference facts:
// it shows what the events say, and asks the engine for more only through request_command.
#pragma once

#include <QString>
#include <QWidget>
#include <cstdint>
#include <vector>

#include "runtime/engine_commands.h"
#include "telemetry/events.h"

namespace fluoro::ui {

class EventPanel : public QWidget {
    Q_OBJECT
  public:
    using QWidget::QWidget;

    // Stable id ("attention", "kv", "speculative", "prompt_cache", "profiler", "tokens",
    // "prompt", "experts", "lens", "overview"), used for saved dock layout, `--screenshot-panel ID`
    // and export file names.
    virtual QString panel_id() const = 0;
    virtual QString title() const = 0;
    // Events in engine order. Called with everything since the previous call.
    virtual void consume(const std::vector<Event>& batch) = 0;
    // Forget everything shown (the window is about to feed another run, e.g. while scrubbing).
    virtual void reset() = 0;
    // The user picked a generated token (chat view or run timeline). Default: ignored.
    virtual void select_token(uint64_t run, int64_t index);
    // Saves what the panel shows to `path`: SVG (vector, through QSvgGenerator) when it ends in
    // ".svg", otherwise a raster image in the format its extension names (PNG when none).
    // Returns false when nothing could be written. Works on a hidden panel too.
    virtual bool export_image(const QString& path);

  signals:
    // The panel needs the engine to do something to show it (e.g. SetAttentionCapture for the
    // layer/head on screen). The window submits it tagged with `tag` (latest wins).
    void request_command(const QString& tag, const fluoro::Command& command);
    // The panel's own pick of a token, for the other panels (select_token) and the chat view.
    void token_selected(quint64 run, qint64 index);
};

// Every panel the workbench shows, in dock order, parented to `parent`.
std::vector<EventPanel*> make_panels(QWidget* parent);

}  // namespace fluoro::ui

Q_DECLARE_METATYPE(fluoro::Command)
