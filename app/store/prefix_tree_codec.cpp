#include "store/prefix_tree_codec.h"

#include "core/error.h"

namespace fluoro::app {

using nlohmann::json;

json prefix_tree_json(const std::vector<PrefixTreeNode>& tree) {
    json out = json::array();
    for (const PrefixTreeNode& n : tree)
        out.push_back({{"parent", n.parent},
                       {"depth", n.depth},
                       {"edge_tokens", n.edge_tokens},
                       {"text", n.text},
                       {"slot", n.slot},
                       {"recency", n.recency},
                       {"entries", n.entries},
                       {"matched", n.matched},
                       {"bytes", n.bytes}});
    return out;
}

std::vector<PrefixTreeNode> prefix_tree_from_json(const json& j, const std::string& where) {
    if (!j.is_array()) throw Error(where + ": the prefix tree is not a list");
    std::vector<PrefixTreeNode> tree;
    for (size_t i = 0; i < j.size(); ++i) {
        const json& n = j[i];
        const std::string w = where + ": prefix tree node " + std::to_string(i);
        if (!n.is_object()) throw Error(w + " is not an object");
        auto integer = [&](const char* key, int64_t min) -> int64_t {
            if (!n.contains(key) || !n[key].is_number_integer())
                throw Error(w + ": '" + key + "' missing or not a whole number");
            const auto v = n[key].get<int64_t>();
            if (v < min) throw Error(w + ": '" + key + "' is " + std::to_string(v));
            return v;
        };
        PrefixTreeNode node;
        node.parent = int32_t(integer("parent", -1));
        if (i == 0 ? node.parent != -1 : node.parent < 0 || size_t(node.parent) >= i)
            throw Error(w + ": parent " + std::to_string(node.parent) +
                        (i == 0 ? " (the root's must be -1)" : " does not come before it"));
        node.depth = integer("depth", 0);
        node.edge_tokens = integer("edge_tokens", 0);
        if (!n.contains("text") || !n["text"].is_string())
            throw Error(w + ": 'text' missing or not a string");
        node.text = n["text"].get<std::string>();
        node.slot = integer("slot", -1);
        node.recency = integer("recency", -1);
        node.entries = integer("entries", 0);
        node.matched = integer("matched", 0);
        node.bytes = integer("bytes", 0);
        if (node.matched > node.edge_tokens)
            throw Error(w + ": 'matched' exceeds the edge's " + std::to_string(node.edge_tokens) +
                        " tokens");
        tree.push_back(std::move(node));
    }
    return tree;
}

std::string encode_prefix_tree(const std::vector<PrefixTreeNode>& tree) {
    return tree.empty()
               ? std::string()
               : prefix_tree_json(tree).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<PrefixTreeNode> decode_prefix_tree(std::string_view text, const std::string& where) {
    if (text.empty()) return {};
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        throw Error(where + ": the prefix tree is not valid JSON (" + e.what() + ")");
    }
    return prefix_tree_from_json(j, where);
}

}  // namespace fluoro::app
