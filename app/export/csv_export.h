// A run's tokens as CSV (RFC 4180 quoting), one row per token:
//   index,token_id,piece,logprob,prob,t_ms,top   — top is "id:logprob" pairs separated by spaces.
#pragma once

#include <string>

#include "store/records.h"

namespace fluoro::app {

std::string run_tokens_csv(const RunRecord& run);

}  // namespace fluoro::app
