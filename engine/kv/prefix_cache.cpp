#include "kv/prefix_cache.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "kv/paged_kv.h"

namespace fluoro {

struct PrefixCache::Node {
    std::vector<int32_t> edge;                          // tokens on the edge into this node
    std::map<int32_t, std::unique_ptr<Node>> children;  // by the first token of their edge
    Node* parent = nullptr;
    int64_t slot = -1;  // the entry whose tokens end here
};

PrefixCache::PrefixCache(PagedKvCache& kv, int64_t first_slot, int64_t n_slots)
    : kv_(kv), first_(first_slot), n_(n_slots), root_(std::make_unique<Node>()) {
    if (first_slot < 0 || n_slots < 0 || first_slot + n_slots > kv.shape().n_seq)
        throw Error("prefix cache: slots " + std::to_string(first_slot) + ".." +
                    std::to_string(first_slot + n_slots - 1) + " are outside the KV cache's " +
                    std::to_string(kv.shape().n_seq) + " sequences");
    entries_.resize(size_t(n_slots));
    for (int64_t s = first_; s < first_ + n_; ++s) kv_.set_length(s, 0);
}

PrefixCache::~PrefixCache() = default;

PrefixCache::Walk PrefixCache::walk(std::span<const int32_t> tokens,
                                    std::vector<int64_t>* prefixes) const {
    Node* n = root_.get();
    size_t i = 0;
    while (i < tokens.size()) {
        const auto it = n->children.find(tokens[i]);
        if (it == n->children.end()) {
            const int32_t next = n->children.empty() ? -1 : n->children.begin()->first;
            return {int64_t(i), n, next};
        }
        Node* c = it->second.get();
        size_t k = 0;
        while (k < c->edge.size() && i + k < tokens.size() && c->edge[k] == tokens[i + k]) ++k;
        i += k;
        n = c;  // every entry below c starts with the i tokens matched so far
        if (k < c->edge.size()) return {int64_t(i), n, c->edge[k]};
        if (prefixes != nullptr && c->slot >= 0) prefixes->push_back(c->slot);
    }
    return {int64_t(i), n, n->children.empty() ? -1 : n->children.begin()->first};
}

int64_t PrefixCache::any_slot(const Node* n) const {
    if (n->slot >= 0) return n->slot;
    for (const auto& [t, c] : n->children)
        if (const int64_t s = any_slot(c.get()); s >= 0) return s;
    return -1;
}

PrefixCache::Match PrefixCache::lookup(std::span<const int32_t> tokens) {
    ++stats_.lookups;
    const Match m = peek(tokens);
    if (m.tokens > 0) {
        ++stats_.hits;
        stats_.hit_tokens += m.tokens;
    }
    return m;
}

PrefixCache::Match PrefixCache::peek(std::span<const int32_t> tokens) const {
    const auto [matched, node, next] = walk(tokens);
    if (matched == 0) return {-1, 0, next};
    const int64_t slot = restorable_slot(node, matched);
    if (slot < 0) return {-1, 0, next};
    return {slot, matched, next};
}

int64_t PrefixCache::restorable_slot(const Node* n, int64_t tokens) const {
    // A cache keeping only the window of sliding-window layers restores an entry's first
    // `tokens` slots only where it still holds their window rows (PagedKvCache::min_cut_length).
    if (n->slot >= 0) {
        const int64_t len = int64_t(entries_[size_t(n->slot - first_)].tokens.size());
        if (tokens == len || tokens >= kv_.min_cut_length(n->slot)) return n->slot;
    }
    for (const auto& [t, c] : n->children)
        if (const int64_t s = restorable_slot(c.get(), tokens); s >= 0) return s;
    return -1;
}

void PrefixCache::restore(const Match& m, int64_t dst) {
    if (m.slot < first_ || m.slot >= first_ + n_ || !entries_[size_t(m.slot - first_)].live)
        throw Error("prefix cache: restore from slot " + std::to_string(m.slot) +
                    ", which holds no entry");
    kv_.share_prefix(m.slot, dst, m.tokens);
    entries_[size_t(m.slot - first_)].used = ++clock_;
}

void PrefixCache::insert(int64_t slot) {
    Entry& e = entries_[size_t(slot - first_)];
    const std::vector<int32_t>& t = e.tokens;
    Node* n = root_.get();
    size_t i = 0;
    while (true) {
        if (i == t.size()) {
            n->slot = slot;
            e.node = n;
            return;
        }
        const auto it = n->children.find(t[i]);
        if (it == n->children.end()) {
            auto leaf = std::make_unique<Node>();
            leaf->edge.assign(t.begin() + std::ptrdiff_t(i), t.end());
            leaf->parent = n;
            leaf->slot = slot;
            e.node = leaf.get();
            n->children[t[i]] = std::move(leaf);
            return;
        }
        Node* c = it->second.get();
        size_t k = 0;
        while (k < c->edge.size() && i + k < t.size() && c->edge[k] == t[i + k]) ++k;
        if (k < c->edge.size()) {  // split c's edge after k tokens
            auto mid = std::make_unique<Node>();
            mid->edge.assign(c->edge.begin(), c->edge.begin() + std::ptrdiff_t(k));
            mid->parent = n;
            std::unique_ptr<Node> rest = std::move(it->second);
            rest->edge.erase(rest->edge.begin(), rest->edge.begin() + std::ptrdiff_t(k));
            rest->parent = mid.get();
            const int32_t key = rest->edge.front();
            mid->children[key] = std::move(rest);
            c = mid.get();
            it->second = std::move(mid);
        }
        n = c;
        i += k;
    }
}

void PrefixCache::erase(int64_t slot) {
    Entry& e = entries_[size_t(slot - first_)];
    Node* n = e.node;
    e = Entry{};
    kv_.set_length(slot, 0);
    n->slot = -1;
    // Drop the leaves left without an entry, then merge an unlabelled node with its only child.
    while (n != root_.get() && n->slot < 0 && n->children.empty()) {
        Node* p = n->parent;
        p->children.erase(n->edge.front());
        n = p;
    }
    if (n != root_.get() && n->slot < 0 && n->children.size() == 1) {
        std::unique_ptr<Node> c = std::move(n->children.begin()->second);
        n->children.clear();
        n->edge.insert(n->edge.end(), c->edge.begin(), c->edge.end());
        n->slot = c->slot;
        if (c->slot >= 0) entries_[size_t(c->slot - first_)].node = n;
        n->children = std::move(c->children);
        for (auto& [t, g] : n->children) g->parent = n;
    }
}

void PrefixCache::evict_lru() {
    int64_t victim = -1;
    for (int64_t s = 0; s < n_; ++s) {
        const Entry& e = entries_[size_t(s)];
        if (e.live && (victim < 0 || e.used < entries_[size_t(victim)].used)) victim = s;
    }
    if (victim < 0) return;
    stats_.evicted_tokens += int64_t(entries_[size_t(victim)].tokens.size());
    erase(first_ + victim);
    ++stats_.evictions;
}

bool PrefixCache::store(std::span<const int32_t> tokens, int64_t src) {
    if (tokens.empty() || n_ == 0) return false;
    std::vector<int64_t> prefixes;  // entries that are prefixes of these tokens: the new one covers
    const auto [matched, node, next] = walk(tokens, &prefixes);
    if (matched == int64_t(tokens.size())) {  // an entry holds them already
        if (const int64_t s = any_slot(node); s >= 0) entries_[size_t(s - first_)].used = ++clock_;
        return false;
    }
    for (const int64_t s : prefixes) erase(s);
    auto free_slot = [&] {
        for (int64_t s = 0; s < n_; ++s)
            if (!entries_[size_t(s)].live) return first_ + s;
        return int64_t(-1);
    };
    int64_t slot = free_slot();
    if (slot < 0) {
        evict_lru();
        slot = free_slot();
    }
    kv_.share_prefix(src, slot, int64_t(tokens.size()));
    Entry& e = entries_[size_t(slot - first_)];
    e.tokens.assign(tokens.begin(), tokens.end());
    e.live = true;
    e.used = ++clock_;
    insert(slot);
    ++stats_.stored;
    return true;
}

void PrefixCache::ensure_free_blocks(int64_t blocks) {
    while (kv_.pool().free_blocks() < blocks) {
        const bool any =
            std::any_of(entries_.begin(), entries_.end(), [](const Entry& e) { return e.live; });
        if (!any) return;
        evict_lru();
    }
}

void PrefixCache::reserve_for(int64_t seq) {
    reserve_for(std::span<const int64_t>(&seq, 1));
}

void PrefixCache::reserve_for(std::span<const int64_t> seqs) {
    const int64_t bt = kv_.block_tokens();
    const int64_t full = (kv_.shape().n_ctx + bt - 1) / bt;
    int64_t need = 0;
    for (const int64_t seq : seqs) need += full + 1 - int64_t(kv_.blocks_of(seq).size());
    ensure_free_blocks(need);
    for (const int64_t seq : seqs)
        while (kv_.window_shortfall(seq) > 0 &&
               std::any_of(entries_.begin(), entries_.end(), [](const Entry& e) { return e.live; }))
            evict_lru();
}

void PrefixCache::clear() {
    for (int64_t s = 0; s < n_; ++s)
        if (entries_[size_t(s)].live) erase(first_ + s);
}

PrefixCache::Stats PrefixCache::stats() const {
    Stats s = stats_;
    s.entries = s.cached_tokens = 0;
    for (const Entry& e : entries_)
        if (e.live) {
            ++s.entries;
            s.cached_tokens += int64_t(e.tokens.size());
        }
    return s;
}

std::vector<std::vector<int32_t>> PrefixCache::entries() const {
    std::vector<std::vector<int32_t>> out;
    for (const Entry& e : entries_) out.push_back(e.live ? e.tokens : std::vector<int32_t>{});
    return out;
}

std::vector<int64_t> PrefixCache::slots_by_recency() const {
    std::vector<int64_t> slots;
    for (int64_t s = 0; s < n_; ++s)
        if (entries_[size_t(s)].live) slots.push_back(first_ + s);
    std::sort(slots.begin(), slots.end(), [&](int64_t a, int64_t b) {
        return entries_[size_t(a - first_)].used < entries_[size_t(b - first_)].used;
    });
    return slots;
}

void PrefixCache::check_invariants() const {
    const auto fail = [](const std::string& what) { throw Error("prefix cache: " + what); };
    int64_t labelled = 0;
    std::vector<const Node*> stack{root_.get()};
    while (!stack.empty()) {
        const Node* n = stack.back();
        stack.pop_back();
        if (n != root_.get()) {
            if (n->edge.empty()) fail("a node with an empty edge");
            if (n->slot < 0 && n->children.size() < 2)
                fail("an unlabelled node with " + std::to_string(n->children.size()) + " children");
        }
        if (n->slot >= 0) {
            ++labelled;
            if (n->slot < first_ || n->slot >= first_ + n_) fail("a node names a foreign slot");
            const Entry& e = entries_[size_t(n->slot - first_)];
            if (!e.live || e.node != n) fail("node and entry of slot disagree");
        }
        for (const auto& [t, c] : n->children) {
            if (c->parent != n) fail("a wrong parent pointer");
            if (c->edge.empty() || c->edge.front() != t) fail("a child under the wrong token");
            stack.push_back(c.get());
        }
    }
    int64_t live = 0;
    for (int64_t s = 0; s < n_; ++s) {
        const Entry& e = entries_[size_t(s)];
        const int64_t slot = first_ + s;
        if (!e.live) {
            if (kv_.length(slot) != 0) fail("free slot " + std::to_string(slot) + " holds tokens");
            continue;
        }
        ++live;
        if (kv_.length(slot) != int64_t(e.tokens.size()))
            fail("slot " + std::to_string(slot) + " holds " + std::to_string(kv_.length(slot)) +
                 " tokens, its entry " + std::to_string(e.tokens.size()));
        std::vector<int32_t> path;
        for (const Node* n = e.node; n != root_.get(); n = n->parent)
            path.insert(path.begin(), n->edge.begin(), n->edge.end());
        if (path != e.tokens) fail("slot " + std::to_string(slot) + "'s path is not its tokens");
    }
    if (live != labelled) fail("entries and labelled nodes differ in number");
}

std::vector<PrefixCache::TreeNode> PrefixCache::tree(std::span<const int32_t> query) const {
    // Recency ranks: 0 for the most recently used entry.
    std::vector<int64_t> rank(entries_.size(), -1);
    {
        const std::vector<int64_t> lru = slots_by_recency();
        for (size_t i = 0; i < lru.size(); ++i)
            rank[size_t(lru[i] - first_)] = int64_t(lru.size() - 1 - i);
    }
    std::vector<TreeNode> out;
    struct Item {
        const Node* node;
        int32_t parent;
        int64_t depth;  // tokens before this node's edge
        bool on_path;   // the query followed every token before this edge
    };
    std::vector<Item> stack{{root_.get(), -1, 0, true}};
    while (!stack.empty()) {
        const Item it = stack.back();
        stack.pop_back();
        TreeNode t;
        t.parent = it.parent;
        t.edge = it.node->edge;
        t.depth = it.depth + int64_t(t.edge.size());
        t.slot = it.node->slot;
        if (t.slot >= 0) t.recency = rank[size_t(t.slot - first_)];
        if (it.on_path)
            while (t.matched < int64_t(t.edge.size()) &&
                   it.depth + t.matched < int64_t(query.size()) &&
                   query[size_t(it.depth + t.matched)] == t.edge[size_t(t.matched)])
                ++t.matched;
        const bool child_on_path = it.on_path && t.matched == int64_t(t.edge.size());
        const int32_t self = int32_t(out.size());
        out.push_back(std::move(t));
        // Children pushed in reverse so they come out in token order.
        for (auto c = it.node->children.rbegin(); c != it.node->children.rend(); ++c)
            stack.push_back({c->second.get(), self, out.back().depth, child_on_path});
    }
    // Entries under each node: children come after their parent, so one backward pass adds up.
    for (size_t i = out.size(); i-- > 0;) {
        if (out[i].slot >= 0) ++out[i].entries;
        if (out[i].parent >= 0) out[size_t(out[i].parent)].entries += out[i].entries;
    }
    return out;
}

}  // namespace fluoro
