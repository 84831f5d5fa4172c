// tests/reference/fixtures/chat_templates.json (made by tests/reference/make_chat_fixtures.py):
// jinja2 renderings of the real chat templates, read by the renderer and tokenization tests.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "test_models.h"

namespace fluoro::test {

inline nlohmann::json load_chat_fixture() {
    std::ifstream in(fixtures_dir() / "chat_templates.json");
    EXPECT_TRUE(in) << "missing fixture chat_templates.json";
    return nlohmann::json::parse(in);
}

}  // namespace fluoro::test
