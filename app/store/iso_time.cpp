#include "store/iso_time.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace fluoro::app {

std::string iso_time_utc(int64_t unix_ms) {
    const std::time_t secs = std::time_t(unix_ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[96];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, int(unix_ms % 1000));
    return buf;
}

int64_t unix_ms_now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace fluoro::app
