// What a stored measurement (measurement.h's JSON) shows: a one-line headline, plots where people
// would rather look than read (perplexity per chunk; perplexity, passkey accuracy and decode speed
// against the KV budget, NLL over position; acceptance by draft position, speedup per prompt set)
// and the table the CLI prints. Pure data from the JSON — the window only draws it. A field
// missing from the JSON (a result stored by another version, an edited file) throws Error naming
// it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace fluoro::app {

struct PlotSeries {
    std::string name;
    std::vector<std::pair<double, double>> points;  // x, y; for a bar plot x is the category index
};

struct MeasurePlot {
    std::string title, x_label, y_label;
    std::vector<std::string> categories;  // non-empty: a bar plot over these
    std::vector<PlotSeries> series;
    bool y_is_fraction = false;  // y in [0, 1]
};

struct MeasureTable {
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;
};

struct MeasureView {
    std::string headline;
    std::vector<MeasurePlot> plots;
    MeasureTable table;
    std::vector<std::string> notes;  // errors of KV-eval cells, for instance
};

MeasureView measure_view(const nlohmann::json& measurement);

}  // namespace fluoro::app
