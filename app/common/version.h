// The application's version string, shared by the CLI and the GUI.
#pragma once

#include <string_view>

namespace fluoro::app {

std::string_view version();

}  // namespace fluoro::app
