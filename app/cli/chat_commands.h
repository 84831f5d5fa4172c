// The slash commands of `fluoro chat` (/set, /system, /reset, /regen, /stats, /help, /bye): parsed
// into the Engine command that does what they ask. Separate from the terminal loop so they can be
// tested without a model.
#pragma once

#include <optional>
#include <string>

#include "runtime/engine_commands.h"
#include "telemetry/events.h"

namespace fluoro::cli {

// What the chat has set, as the commands change it: the Engine keeps its own copy, but a
// ChangeSettings replaces all sampling parameters at once, and /reset starts the new conversation
// with the system prompt last set.
struct ChatState {
    SamplingParams sampling;
    int64_t max_tokens = 1024;
    std::string system;
    std::optional<RunFinished> last;  // the previous answer, for /stats
};

struct ChatCommandResult {
    bool handled = false;  // the line was a slash command
    bool quit = false;     // /bye, /exit, /quit
    std::string message;   // what to print (help text, confirmation or an error)
    // What to run on the Engine: a setting or a new conversation (Engine::submit_blocking), or a
    // generation (Regenerate: streamed like an answer).
    std::optional<Command> command;
};

// Parses `line`; a valid command updates `state` as its Engine command will update the engine.
ChatCommandResult run_chat_command(const std::string& line, ChatState& state);

}  // namespace fluoro::cli
