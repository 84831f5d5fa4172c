#include "store/data_dir.h"

#include <cstdlib>

#include "core/error.h"

namespace fluoro::app {

std::filesystem::path default_db_path() {
    std::filesystem::path base;
    const char* xdg = std::getenv("XDG_DATA_HOME");
    if (xdg && std::filesystem::path(xdg).is_absolute()) {
        base = xdg;
    } else {
        const char* home = std::getenv("HOME");
        if (!home || !std::filesystem::path(home).is_absolute())
            throw Error(
                "cannot locate the session database: neither XDG_DATA_HOME nor HOME is an "
                "absolute path; pass --db PATH");
        base = std::filesystem::path(home) / ".local" / "share";
    }
    return base / "fluoroscope" / "sessions.db";
}

}  // namespace fluoro::app
