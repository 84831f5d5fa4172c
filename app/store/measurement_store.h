// The measurements table (schema v8): what Measure → ... in the window ran and what came out
// (app/measure/measurement.h), kept beside the conversations so a result stays to be looked at,
// plotted and compared later.
#pragma once

#include <cstdint>
#include <vector>

#include "store/records.h"

namespace fluoro::app {

class Store;

// Stores `m` (its id is ignored) and returns the new id. created_at empty: now.
int64_t add_measurement(Store& store, const MeasurementRecord& m);
// Every stored measurement, newest first.
std::vector<MeasurementRecord> list_measurements(Store& store);
// Throws StoreError (SQLITE_NOTFOUND) when there is no such measurement.
void delete_measurement(Store& store, int64_t id);

}  // namespace fluoro::app
