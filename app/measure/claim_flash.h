// "FlashAttention: never materializing the n × n score matrix cuts memory from O(n²) to O(n) and
// the memory traffic that dominates attention's time" (docs/CLAIMS.md 3), measured with
// eval/attention_io.h's three single-threaded paths, beside this CPU's cache sizes (sysfs), which
// decide where the score matrix stops fitting and the argument starts to bite.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

namespace fluoro::app {

nlohmann::json claim_flash_io(const std::vector<int64_t>& contexts);

}  // namespace fluoro::app
