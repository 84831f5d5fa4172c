// The time an event happened, in the run's nanoseconds (a step: its end), for the run timeline.
#pragma once

#include <cstdint>

#include "telemetry/events.h"

namespace fluoro::ui {

int64_t event_time_ns(const Event& e);

}  // namespace fluoro::ui
