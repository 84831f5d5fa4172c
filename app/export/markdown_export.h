// A conversation as a Markdown transcript: the messages of every branch in order, each reply
// followed by its run's statistics (model, tokens, TTFT, decode speed, stop reason).
#pragma once

#include <string>

#include "store/records.h"

namespace fluoro::app {

std::string conversation_markdown(const ConversationRecord& c);

}  // namespace fluoro::app
