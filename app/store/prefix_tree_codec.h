// The prefix cache's radix tree as a request left it (PrefixCacheEvent::tree) as stored text:
// the cache_events.tree column (schema 9) and the exported conversation's "tree" — a JSON array
// of nodes {"parent", "depth", "edge_tokens", "text", "slot", "recency", "entries", "matched",
// "bytes"}, the root first, every parent before its children. Decoding checks all of that and
// throws Error naming the node and field; an empty text is no tree.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "telemetry/events.h"

namespace fluoro::app {

nlohmann::json prefix_tree_json(const std::vector<PrefixTreeNode>& tree);
std::vector<PrefixTreeNode> prefix_tree_from_json(const nlohmann::json& j,
                                                  const std::string& where);

std::string encode_prefix_tree(const std::vector<PrefixTreeNode>& tree);  // "" for none
std::vector<PrefixTreeNode> decode_prefix_tree(std::string_view text, const std::string& where);

}  // namespace fluoro::app
