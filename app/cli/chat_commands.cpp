#include "cli/chat_commands.h"

#include <sstream>

#include "cli/engine_driver.h"
#include "core/error.h"
#include "session/stats_line.h"

namespace fluoro::cli {
namespace {

constexpr const char* kHelp =
    "/set temp|top_k|top_p|min_p|repeat_penalty|seed|max_tokens VALUE   change a setting\n"
    "/system TEXT   set the system prompt (applies from the next turn)\n"
    "/reset         start a new conversation\n"
    "/regen         answer the last message again\n"
    "/stats         statistics of the last answer\n"
    "/bye           quit (also Ctrl-D); Ctrl-C stops the current answer";

ChangeSettings apply_set(const std::string& key, const std::string& value, ChatState& state) {
    SamplingParams p = state.sampling;
    size_t used = 0;
    const double v = std::stod(value, &used);
    if (used != value.size()) throw Error("'" + value + "' is not a number");
    if (key == "temp" || key == "temperature")
        p.temperature = float(v);
    else if (key == "top_k")
        p.top_k = int32_t(v);
    else if (key == "top_p")
        p.top_p = float(v);
    else if (key == "min_p")
        p.min_p = float(v);
    else if (key == "repeat_penalty")
        p.repeat_penalty = float(v);
    else if (key == "seed")
        p.seed = uint64_t(v);
    else if (key == "max_tokens") {
        if (v < 1) throw Error("max_tokens must be at least 1");
        state.max_tokens = int64_t(v);
        return ChangeSettings{std::nullopt, state.max_tokens, std::nullopt};
    } else
        throw Error("unknown setting '" + key + "' (see /help)");
    // Checked here so that a bad value changes nothing, neither here nor in the engine.
    p.validate();
    state.sampling = p;
    return ChangeSettings{p, std::nullopt, std::nullopt};
}

}  // namespace

ChatCommandResult run_chat_command(const std::string& line, ChatState& state) {
    ChatCommandResult r;
    if (line.empty() || line[0] != '/') return r;
    r.handled = true;
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    try {
        if (cmd == "/bye" || cmd == "/exit" || cmd == "/quit") {
            r.quit = true;
        } else if (cmd == "/help" || cmd == "/?") {
            r.message = kHelp;
        } else if (cmd == "/reset") {
            r.command = NewConversation{state.system};
            r.message = "(new conversation)";
        } else if (cmd == "/regen") {
            r.command = Regenerate{};
        } else if (cmd == "/stats") {
            r.message = state.last
                            ? app::stats_line(result_of(*state.last), state.last->reasoning_tokens)
                            : "(no answer yet)";
        } else if (cmd == "/system") {
            std::string text;
            std::getline(in >> std::ws, text);
            r.command = ChangeSettings{std::nullopt, std::nullopt, text};
            state.system = text;
            r.message = "(system prompt set)";
        } else if (cmd == "/set") {
            std::string key, value;
            if (!(in >> key >> value)) throw Error("usage: /set NAME VALUE");
            r.command = apply_set(key, value, state);
            r.message = key + " = " + value;
        } else {
            r.message = "unknown command " + cmd + " (see /help)";
        }
    } catch (const std::exception& e) {
        r.message = std::string("error: ") + e.what();
    }
    return r;
}

}  // namespace fluoro::cli
