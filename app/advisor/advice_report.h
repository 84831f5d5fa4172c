// The advisor's findings as a report: readable text for the terminal, or JSON for scripts (every
// number the text shows, per-request detail always included). Pure formatting of PromptAdvice.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "advisor/prompt_advisor.h"

namespace fluoro::app {

// Requests are listed one per line when there are at most `per_request_up_to` of them.
std::string advice_text(const PromptAdvice& advice, std::span<const AdvisorRequest> requests,
                        size_t per_request_up_to = 20);
nlohmann::ordered_json advice_json(const PromptAdvice& advice,
                                   std::span<const AdvisorRequest> requests);

std::string percent(double fraction);  // "87.5 %"

}  // namespace fluoro::app
