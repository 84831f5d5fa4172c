// Where the session database lives by default: $XDG_DATA_HOME/fluoroscope/sessions.db, or
// ~/.local/share/fluoroscope/sessions.db when XDG_DATA_HOME is unset or not absolute (as the XDG
// Base Directory specification says). `--db PATH` overrides it on the command line. Cached files
// (the prefix cache) go under XDG_CACHE_HOME, or ~/.cache.
#pragma once

#include <filesystem>
#include <string_view>

namespace fluoro::app {

// Throws fluoro::Error when neither XDG_DATA_HOME nor HOME gives a usable directory.
std::filesystem::path default_db_path();

// Where the workbench keeps a model's prefix cache across restarts:
// $XDG_CACHE_HOME/fluoroscope/prefix-cache/<model file stem>.<kv type>.<backend>.fpc (or under
// ~/.cache), one file per model and setting so switching between them does not overwrite one
// another's cache. The file's own key still decides whether it is used. Throws like
// default_db_path().
std::filesystem::path prefix_cache_file_for(const std::filesystem::path& model,
                                            std::string_view kv_type, std::string_view backend);

}  // namespace fluoro::app
