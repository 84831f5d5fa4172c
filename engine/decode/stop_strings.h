// Stop strings (OpenAI's `stop`): generation ends when the reply's text contains one, and the
// reply is cut before it. The tokens that spelled it were generated and streamed as telemetry;
// only the text is cut. A streaming client must not see a stop string's first bytes before it is
// known whether they begin one: releasable() says how much of the text is safe to send.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace fluoro {

// Where the earliest stop string starts in `text`, looking only at matches that end after byte
// `from` (the text before it was checked already); nullopt when none does.
std::optional<size_t> find_stop_string(std::string_view text, size_t from,
                                       std::span<const std::string> stops);

// How many leading bytes of `text` can be sent: up to the first whole stop string, and short of
// a tail that is the start of one (it may complete with the next token).
size_t releasable(std::string_view text, std::span<const std::string> stops);

}  // namespace fluoro
