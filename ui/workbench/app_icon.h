// The application and window icon: installers/linux/io.fluoroscope.Fluoroscope.svg, compiled in
// (icon.qrc). Loaded through Qt's SVG icon engine; where that plugin is missing it is rendered
// with QSvgRenderer (Qt6::Svg) into pixmaps of the usual icon sizes instead.
#pragma once

#include <QIcon>
#include <QString>

namespace fluoro::ui {

inline constexpr const char* kAppIconPath = ":/icons/fluoroscope.svg";
QIcon app_icon();

}  // namespace fluoro::ui
