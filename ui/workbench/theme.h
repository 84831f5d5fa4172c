// Light and dark themes: the Fusion style with a light or dark palette, applied to the whole app.
#pragma once

namespace fluoro::ui {

void apply_theme(bool dark);

}  // namespace fluoro::ui
