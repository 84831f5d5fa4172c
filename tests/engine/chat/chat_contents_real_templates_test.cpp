// render_locating_contents() on the ~70 real chat templates llama.cpp collects (fetched from the
// pinned llama-cpp-python sdist by scripts/fetch-llama-cpp-source.sh): for every conversation of
// plain text messages a template renders, the contents must be found in the rendering — each
// located span is exactly a piece of its message's text, and the text outside the spans is the
// template's markup (the marker rendering's). A template whose markup depends on what a content
// says cannot be located this way; those are listed below with the reason, and the test fails
// when the list is wrong in either direction.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "chat/chat_contents.h"
#include "core/error.h"
#include "test_models.h"

namespace fluoro {
namespace {

using json = nlohmann::json;

std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The conversations jinja_compare.py renders, keeping those of plain role/content text messages.
std::map<std::string, std::pair<std::vector<ChatMessage>, bool>> plain_conversations() {
    const json all = json::parse(read_text(std::filesystem::path(FLUORO_TESTS_DIR) / "reference" /
                                           "jinja_conversations.json"));
    std::map<std::string, std::pair<std::vector<ChatMessage>, bool>> out;
    for (const auto& [name, c] : all.items()) {
        if (name.starts_with("_") || c.contains("tools") || c.contains("enable_thinking")) continue;
        std::vector<ChatMessage> msgs;
        bool plain = true;
        for (const json& m : c["messages"]) {
            plain = plain && m.size() == 2 && m["content"].is_string() &&
                    (m["role"] == "system" || m["role"] == "user" || m["role"] == "assistant");
            if (plain) msgs.push_back({m["role"], m["content"]});
        }
        if (plain) out[name] = {std::move(msgs), c.value("add_generation_prompt", false)};
    }
    return out;
}

// Templates whose markup depends on the contents, so that a marker rendering differs (name ->
// why). None of llama.cpp's set today, for these conversations.
const std::map<std::string, std::string> kNotLocatable = {};

TEST(ChatContentsRealTemplates, ContentsAreFoundInEveryRendering) {
    const auto dir = test::models_dir() / "llama-cpp-python-0.3.36" / "templates";
    if (!std::filesystem::is_directory(dir)) {
        if (test::models_required()) FAIL() << dir << " missing (FLUORO_REQUIRE_MODELS=1)";
        GTEST_SKIP() << dir << " not found; run scripts/fetch-llama-cpp-source.sh";
    }
    const auto conversations = plain_conversations();
    ASSERT_GE(conversations.size(), 4u);
    size_t rendered = 0, located = 0, templates = 0;
    std::set<std::string> missed;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().extension() != ".jinja") continue;
        const std::string name = entry.path().stem().string();
        const ChatFormat format = ChatFormat::from_file(read_text(entry.path()), "", "<s>", "</s>");
        if (!format.uses_file_template()) continue;  // not parsed: JinjaCompare reports those
        ++templates;
        for (const auto& [conv, c] : conversations) {
            ChatWithContents r;
            try {
                r = render_locating_contents(format, c.first, c.second);
            } catch (const Error&) {
                continue;  // the template refuses this conversation (jinja2 does too)
            }
            ++rendered;
            if (!r.contents) {
                missed.insert(name);
                if (!kNotLocatable.contains(name))
                    ADD_FAILURE() << name << " / " << conv << ": contents not located";
                continue;
            }
            ++located;
            // Each span is a piece of one message's text.
            for (const ContentSpan& s : *r.contents) {
                const std::string piece = r.chat.text.substr(s.offset, s.length);
                bool found = false;
                for (const ChatMessage& m : c.first)
                    found = found || m.content.find(piece) != std::string::npos;
                EXPECT_TRUE(found) << name << " / " << conv << ": span '" << piece << "'";
            }
        }
    }
    for (const auto& [name, why] : kNotLocatable)
        EXPECT_TRUE(missed.contains(name)) << name << " is listed but now located: " << why;
    std::cout << "[ contents ] located in " << located << " of " << rendered << " renderings of "
              << templates << " templates\n";
    EXPECT_GE(templates, 60u);
}

}  // namespace
}  // namespace fluoro
