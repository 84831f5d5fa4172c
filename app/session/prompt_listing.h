// The prompt inspector's text form (`fluoro run --show-prompt`, `/prompt` in `fluoro chat`): the
// prompt exactly as the model saw it, one token per line with its position, id and text, special
// tokens (template markup) marked, and control characters and broken UTF-8 escaped so the
// listing is plain, printable text.
#pragma once

#include <string>
#include <string_view>

#include "telemetry/events.h"

namespace fluoro::app {

// A token's text for display: quoted, \n \r \t \\ \" and other control bytes escaped (\xNN),
// and bytes of an incomplete UTF-8 sequence escaped as \xNN (a token may hold part of one).
std::string quoted_piece(std::string_view piece);

// "prompt: N tokens ..." then one line per token: "  pos  id  [piece]" for a special token,
// "  pos  id  \"piece\"" otherwise.
std::string prompt_listing(const RunStarted& run);

}  // namespace fluoro::app
