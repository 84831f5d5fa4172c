// The slash commands of `fluoro chat` (/set, /reset, /stats, /system, /help): parsed and
// applied to a ChatSession. Separate from the terminal loop so they can be tested.
#pragma once

#include <string>

#include "decode/chat_session.h"

namespace fluoro::cli {

struct ChatCommandResult {
    bool handled = false;  // the line was a slash command
    bool quit = false;     // /bye, /exit, /quit
    std::string message;   // what to print (help text, confirmation or an error)
};

// `last` is the previous answer's result, for /stats.
ChatCommandResult run_chat_command(const std::string& line, ChatSession& chat,
                                   const GenerateResult* last, GenerateOptions& gen);

}  // namespace fluoro::cli
