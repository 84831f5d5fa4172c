// Where the session database lives by default: $XDG_DATA_HOME/fluoroscope/sessions.db, or
// ~/.local/share/fluoroscope/sessions.db when XDG_DATA_HOME is unset or not absolute (as the XDG
// Base Directory specification says). `--db PATH` overrides it on the command line.
#pragma once

#include <filesystem>

namespace fluoro::app {

// Throws fluoro::Error when neither XDG_DATA_HOME nor HOME gives a usable directory.
std::filesystem::path default_db_path();

}  // namespace fluoro::app
