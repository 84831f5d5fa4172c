#include "store/data_dir.h"

#include <cstdlib>
#include <string>

#include "core/error.h"

namespace fluoro::app {

namespace {

// $VAR when it is an absolute path, else $HOME/fallback (XDG Base Directory rules).
std::filesystem::path xdg_dir(const char* var, const char* fallback, const char* what) {
    const char* xdg = std::getenv(var);
    if (xdg && std::filesystem::path(xdg).is_absolute()) return xdg;
    const char* home = std::getenv("HOME");
    if (!home || !std::filesystem::path(home).is_absolute())
        throw Error(std::string("cannot locate ") + what + ": neither " + var +
                    " nor HOME is an absolute path");
    return std::filesystem::path(home) / fallback;
}

}  // namespace

std::filesystem::path default_db_path() {
    return xdg_dir("XDG_DATA_HOME", ".local/share", "the session database (pass --db PATH)") /
           "fluoroscope" / "sessions.db";
}

std::filesystem::path prefix_cache_file_for(const std::filesystem::path& model,
                                            std::string_view kv_type, std::string_view backend) {
    std::string name = model.stem().string();
    name += '.';
    for (const char c : kv_type) name += c == '/' ? '-' : c;  // "q8_0/f16": keys / values
    name += '.';
    name += backend;
    name += ".fpc";
    return xdg_dir("XDG_CACHE_HOME", ".cache", "the prefix cache directory") / "fluoroscope" /
           "prefix-cache" / name;
}

}  // namespace fluoro::app
