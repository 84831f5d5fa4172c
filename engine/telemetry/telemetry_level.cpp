#include "telemetry/telemetry_level.h"

namespace fluoro {

std::string_view telemetry_level_name(TelemetryLevel level) {
    switch (level) {
        case TelemetryLevel::Off:
            return "off";
        case TelemetryLevel::Summary:
            return "summary";
        case TelemetryLevel::Full:
            return "full";
    }
    return "unknown";
}

std::optional<TelemetryLevel> parse_telemetry_level(std::string_view text) {
    if (text == "off") return TelemetryLevel::Off;
    if (text == "summary") return TelemetryLevel::Summary;
    if (text == "full") return TelemetryLevel::Full;
    return std::nullopt;
}

}  // namespace fluoro
