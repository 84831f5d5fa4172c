// How much the engine reports while it runs, changeable at any moment (the next step uses it):
//   Off     — tokens (id, text, logprob) and run start/finish only: what a chat needs to show text.
//   Summary — also a step record per forward step (phase, tokens, wall time), the top-N
//             alternatives of each token, prefix-cache events and memory counters per run.
//   Full    — also wall time per operation category inside each step and KV occupancy
//             snapshots (and attention snapshots when requested).
#pragma once

#include <optional>
#include <string_view>

namespace fluoro {

enum class TelemetryLevel { Off, Summary, Full };

std::string_view telemetry_level_name(TelemetryLevel level);
// "off", "summary", "full"; nullopt for anything else.
std::optional<TelemetryLevel> parse_telemetry_level(std::string_view text);

}  // namespace fluoro
