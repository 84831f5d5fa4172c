// `fluoroscope --screenshot FILE`: loads the model, sends one prompt, waits for the reply (or,
// with --demo, shows the bundled run), selects a generated token, then renders the window — or
// the dock of --panel ID — to FILE and exits. Works under any Qt platform, offscreen included.
#pragma once

#include <QString>

namespace fluoro::ui {

class MainWindow;
struct LaunchOptions;

// Returns the exit code: 0 written, 1 failed (the reason on stderr).
int take_screenshot(MainWindow& window, const LaunchOptions& opt, const QString& model);

}  // namespace fluoro::ui
