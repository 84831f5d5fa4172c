// A conversation as one JSON document — every message, run and recorded event — and back. Ids are
// replaced by positions (a message's parent is the index of an earlier message; a run names the
// index of its message), so a document imported into any database exports to the same bytes.
// Layout: docs/STORAGE.md ("Export formats").
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "store/records.h"

namespace fluoro::app {

inline constexpr const char* kConversationFormat = "fluoroscope-conversation";
// 2: + prompt_ids/prompt_pieces/drafted_tokens/accepted_tokens per run, spec step bonus and
// timings, attention snapshot key_begin, attention_stats. Version 1 documents still import (the
// fields take their defaults); in a version 2 document they are required.
// 3: + kv_evictions per run (required in version 3 documents, empty in older ones).
// 4: + the reasoning split: per token split/reasoning/reasoning_text/answer_text, per run
// reasoning_tokens/reasoning_ns (required in version 4 documents; older ones: no split known).
inline constexpr int kConversationFormatVersion = 4;

nlohmann::json conversation_to_json(const ConversationRecord& c);
// Throws fluoro::Error naming the first field that is missing or malformed.
ConversationRecord conversation_from_json(const nlohmann::json& j);
// The same from a file (`fluoro sessions import`, the window's File → Import conversation):
// throws Error naming the file when it cannot be read, is not JSON or not a conversation.
ConversationRecord conversation_from_file(const std::filesystem::path& path);

}  // namespace fluoro::app
