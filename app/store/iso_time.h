// Wall-clock timestamps as the store writes them: ISO 8601 UTC with milliseconds.
#pragma once

#include <cstdint>
#include <string>

namespace fluoro::app {

std::string iso_time_utc(int64_t unix_ms);  // "2025-01-31T12:34:56.789Z"
int64_t unix_ms_now();

}  // namespace fluoro::app
