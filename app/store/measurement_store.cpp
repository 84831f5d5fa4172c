#include "store/measurement_store.h"

#include "store/iso_time.h"
#include "store/store.h"

namespace fluoro::app {

int64_t add_measurement(Store& store, const MeasurementRecord& m) {
    store.db()
        .prepare(
            "INSERT INTO measurements(created_at, kind, model_path, headline, params_json, "
            "result_json, seconds) VALUES(?, ?, ?, ?, ?, ?, ?)")
        .bind(1, m.created_at.empty() ? iso_time_utc(unix_ms_now()) : m.created_at)
        .bind(2, m.kind)
        .bind(3, m.model_path)
        .bind(4, m.headline)
        .bind(5, m.params_json)
        .bind(6, m.result_json)
        .bind(7, m.seconds)
        .run();
    return store.db().last_insert_id();
}

std::vector<MeasurementRecord> list_measurements(Store& store) {
    Statement st = store.db().prepare(
        "SELECT id, created_at, kind, model_path, headline, params_json, result_json, seconds "
        "FROM measurements ORDER BY id DESC");
    std::vector<MeasurementRecord> out;
    while (st.step())
        out.push_back({st.int64(0), st.text(1), st.text(2), st.text(3), st.text(4), st.text(5),
                       st.text(6), st.real(7)});
    return out;
}

void delete_measurement(Store& store, int64_t id) {
    store.db().prepare("DELETE FROM measurements WHERE id = ?").bind(1, id).run();
    if (sqlite3_changes(store.db().handle()) == 0)
        throw StoreError("no measurement " + std::to_string(id) + " in " + store.path().string(),
                         SQLITE_NOTFOUND);
}

}  // namespace fluoro::app
