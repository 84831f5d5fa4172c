// Docks whose contents scroll instead of forcing their size on the window: a dock's minimum size
// becomes part of the main window's, so a tall form (Settings) or a panel of many fixed-size rows
// would otherwise push the chat input off a laptop screen. The content keeps its own minimum size
// inside the scroll area and gets the dock's whole size when there is room (widgetResizable).
#pragma once

#include <QString>

class QDockWidget;
class QWidget;

namespace fluoro::ui {

// A dock named `object_name` showing `content` in a frameless, resizable scroll area.
QDockWidget* make_scroll_dock(const QString& title, const QString& object_name, QWidget* content,
                              QWidget* parent);

}  // namespace fluoro::ui
