// Events of a second engine recorded into the same store as the first's: its run and
// conversation numbers moved above `base`, so the recorder (which keys runs and conversations by
// those numbers) never takes one engine's run for the other's. Zero stays zero (no run).
#pragma once

#include <cstdint>

#include "telemetry/events.h"

namespace fluoro::app {

Event with_id_base(Event e, uint64_t base);

}  // namespace fluoro::app
