#include "cli/chat_commands.h"

#include <sstream>

#include "core/error.h"
#include "session/stats_line.h"

namespace fluoro::cli {
namespace {

constexpr const char* kHelp =
    "/set temp|top_k|top_p|min_p|repeat_penalty|seed|max_tokens VALUE   change a setting\n"
    "/system TEXT   set the system prompt (applies from the next turn)\n"
    "/reset         start a new conversation\n"
    "/stats         statistics of the last answer\n"
    "/bye           quit (also Ctrl-D); Ctrl-C stops the current answer";

std::string apply_set(const std::string& key, const std::string& value, ChatSession& chat,
                      GenerateOptions& gen) {
    SamplingParams p = chat.sampling();
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
        gen.max_tokens = int64_t(v);
        return "max_tokens = " + value;
    } else
        throw Error("unknown setting '" + key + "' (see /help)");
    chat.set_sampling(p);  // validates
    return key + " = " + value;
}

}  // namespace

ChatCommandResult run_chat_command(const std::string& line, ChatSession& chat,
                                   const GenerateResult* last, GenerateOptions& gen) {
    ChatCommandResult r;
    if (line.empty() || line[0] != '/') return r;
    r.handled = true;
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    try {
        if (cmd == "/bye" || cmd == "/exit" || cmd == "/quit")
            r.quit = true;
        else if (cmd == "/help" || cmd == "/?")
            r.message = kHelp;
        else if (cmd == "/reset") {
            chat.reset();
            r.message = "(new conversation)";
        } else if (cmd == "/stats") {
            r.message = last ? app::stats_line(*last) : "(no answer yet)";
        } else if (cmd == "/system") {
            std::string text;
            std::getline(in >> std::ws, text);
            chat.set_system_prompt(text);
            r.message = "(system prompt set)";
        } else if (cmd == "/set") {
            std::string key, value;
            if (!(in >> key >> value)) throw Error("usage: /set NAME VALUE");
            r.message = apply_set(key, value, chat, gen);
        } else {
            r.message = "unknown command " + cmd + " (see /help)";
        }
    } catch (const std::exception& e) {
        r.message = std::string("error: ") + e.what();
    }
    return r;
}

}  // namespace fluoro::cli
