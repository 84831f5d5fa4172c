#include "advisor/prompt_advisor.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "advisor/prompt_trie.h"
#include "advisor/shared_prefixes.h"
#include "advisor/stable_first.h"

namespace fluoro::app {
namespace {

constexpr int64_t kContextBytes = 24;  // of text shown (and keyed on) around a breaker

// What a request leaves in the cache: its prompt and the generated tokens the model saw.
std::vector<int32_t> cached_sequence(const AdvisorRequest& r, std::vector<int32_t> prompt) {
    prompt.insert(prompt.end(), r.output_ids.begin(), r.output_ids.end());
    return prompt;
}

std::vector<std::string> cached_pieces(const AdvisorRequest& r) {
    if (r.pieces.size() != r.ids.size()) return {};
    if (r.output_pieces.size() != r.output_ids.size()) return {};
    std::vector<std::string> out = r.pieces;
    out.insert(out.end(), r.output_pieces.begin(), r.output_pieces.end());
    return out;
}

// The prompt part of a request (its text view covers the cached sequence).
PromptView prompt_view(const std::vector<int32_t>& seq, int64_t prompt, const PromptText& t) {
    return {std::span<const int32_t>(seq).first(size_t(prompt)), &t};
}

std::pair<std::string, std::string> divergence_text(const PromptText& here, const PromptText& there,
                                                    int64_t at, size_t chars) {
    return {one_line(here.slice(at, at + 3), chars), one_line(there.slice(at, at + 3), chars)};
}

std::string token_words(const MessageLocation& loc, int64_t token) {
    std::string s = "token " + std::to_string(loc.offset) + " of " + describe_location(loc);
    if (!loc.role.empty()) s += " (prompt token " + std::to_string(token) + ")";
    return s;
}

std::string suggestion_for(const CacheBreaker& b) {
    const std::string where = token_words(b.location, b.token);
    if (b.kind == BreakerKind::Reordered)
        return "keep the " + std::to_string(b.segments) +
               (b.segment_kind == SegmentKind::JsonObjects ? " JSON objects" : " lines") + " at " +
               where + " in one fixed order (e.g. sorted by name) in every request";
    switch (b.span) {
        case SpanKind::Timestamp:
            return "move the timestamp at " + where +
                   " to the end of the prompt (after the stable content), or round it";
        case SpanKind::Id:
            return "move the id at " + where + " to the end of the prompt, or leave it out";
        case SpanKind::Number:
            return "move the changing number at " + where + " to the end of the prompt";
        case SpanKind::Other:
            break;
    }
    return "the text at " + where +
           " changes between requests while what follows stays the same: put it after the "
           "stable content";
}

// Breakers found in different request pairs are the same one when they have the same kind and
// sit in the same message behind the same text.
using BreakerKey = std::tuple<int, int, std::string, std::string>;

class BreakerTable {
  public:
    BreakerTable(std::span<const PromptText> texts, size_t chars) : texts_(texts), chars_(chars) {}

    void add(const PairBreaker& pb, int64_t request, int64_t source) {
        const PromptText& t = texts_[size_t(request)];
        const PromptText& s = texts_[size_t(source)];
        const int64_t first = pb.range.first;
        const MessageLocation loc = locate_message(t, first);
        const std::string before =
            t.has_text() ? tail_bytes(t.slice(0, first), kContextBytes) : token_key(first);
        const BreakerKey key{int(pb.kind), int(pb.span), loc.role, before};
        auto [it, fresh] = table_.try_emplace(key);
        CacheBreaker& b = it->second;
        if (fresh) {
            b.kind = pb.kind;
            b.span = pb.span;
            b.segment_kind = pb.segment_kind;
            b.segments = pb.segments;
            b.request = request;
            b.source = source;
            b.token = first;
            b.tokens = pb.range.second - pb.range.first;
            b.location = loc;
            b.before = one_line(before, chars_ / 2, true);
            b.text = one_line(t.slice(pb.range.first, pb.range.second), chars_);
            b.other_text = one_line(s.slice(pb.other_range.first, pb.other_range.second), chars_);
            b.after = one_line(t.slice(pb.range.second, pb.range.second + 8), chars_ / 2);
        }
        b.occurrences++;
        b.matched_after += pb.matched_after;
    }

    std::vector<CacheBreaker> sorted() const {
        std::vector<CacheBreaker> out;
        for (const auto& [key, b] : table_) {
            out.push_back(b);
            out.back().suggestion = suggestion_for(b);
        }
        std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
            return x.matched_after != y.matched_after ? x.matched_after > y.matched_after
                                                      : x.request < y.request;
        });
        return out;
    }

  private:
    static std::string token_key(int64_t token) {  // without text: where it is
        std::string s = "token ";
        s += std::to_string(token);
        return s;
    }
    static std::string tail_bytes(const std::string& s, int64_t n) {
        return int64_t(s.size()) <= n ? s : s.substr(s.size() - size_t(n));
    }

    std::span<const PromptText> texts_;
    size_t chars_;
    std::map<BreakerKey, CacheBreaker> table_;
};

void add_moved(PromptMarks& m, const TokenRange& range) {
    if (std::find(m.moved.begin(), m.moved.end(), range) == m.moved.end()) m.moved.push_back(range);
}

void add_region(PromptMarks& m, const PromptMarks::Region& region) {
    for (const auto& r : m.reordered)
        if (r.range == region.range) return;
    m.reordered.push_back(region);
}

void mark(PromptMarks& m, const PairBreaker& b, bool other_side) {
    const TokenRange& range = other_side ? b.other_range : b.range;
    if (b.kind == BreakerKind::Volatile)
        add_moved(m, range);
    else
        add_region(m, {range, b.canonical_key, {}});
}

// A request keeps its source's marks that lie in the prefix the two share: the same tokens
// there, so the same rewrite (a request identical to its source up to a timestamp's end was
// never compared at the timestamp, but its timestamp moves all the same).
void inherit(std::vector<PromptMarks>& marks, const CacheSimulation& sim) {
    // (Marks lie in prompts, and a request shares at most its prompt.)
    for (size_t i = 0; i < marks.size(); ++i) {
        const RequestReuse& r = sim.requests[i];
        if (r.source < 0) continue;
        const PromptMarks& from = marks[size_t(r.source)];
        for (const TokenRange& m : from.moved)
            if (m.second <= r.shared_tokens) add_moved(marks[i], m);
        for (const auto& region : from.reordered)
            if (region.range.second <= r.shared_tokens) add_region(marks[i], region);
    }
}

// Every region holding the same segments becomes the earliest request's ordering of them: the
// one fixed order the suggestion asks for, with a tokenization the model really produced.
void choose_replacements(std::span<const AdvisorRequest> reqs, std::vector<PromptMarks>& marks) {
    std::map<std::string, std::vector<int32_t>> first_seen;
    for (size_t i = 0; i < reqs.size(); ++i) {
        for (auto& region : marks[i].reordered) {
            const auto [first, last] = region.range;
            auto [it, fresh] = first_seen.try_emplace(region.key);
            if (fresh) it->second.assign(reqs[i].ids.begin() + first, reqs[i].ids.begin() + last);
            region.replacement = it->second;
        }
    }
}

WhatIf what_if(std::span<const AdvisorRequest> reqs, const std::vector<PromptMarks>& marks) {
    WhatIf w;
    std::vector<std::vector<int32_t>> rewritten;
    std::vector<int64_t> lengths;
    rewritten.reserve(reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
        rewritten.push_back(cached_sequence(reqs[i], stable_first(reqs[i].ids, marks[i])));
        lengths.push_back(int64_t(reqs[i].ids.size()));
        if (marks[i].empty()) continue;
        w.requests_rewritten++;
        w.moved_spans += int64_t(marks[i].moved.size());
        w.reordered_regions += int64_t(marks[i].reordered.size());
    }
    PromptTrie trie(rewritten);
    w.simulation = simulate_prefix_cache(trie, rewritten, lengths);
    return w;
}

}  // namespace

PromptAdvice advise_prompt_order(std::span<const AdvisorRequest> reqs, const AdvisorOptions& opt) {
    std::vector<std::vector<int32_t>> seqs;
    std::vector<int64_t> lengths;
    std::vector<PromptText> texts;
    seqs.reserve(reqs.size());
    texts.reserve(reqs.size());
    for (const auto& r : reqs) {
        seqs.push_back(cached_sequence(r, r.ids));
        lengths.push_back(int64_t(r.ids.size()));
        texts.emplace_back(seqs.back(), cached_pieces(r));
    }

    PromptAdvice advice;
    PromptTrie trie(seqs);
    advice.recorded = simulate_prefix_cache(trie, seqs, lengths);
    advice.shared = shared_prefixes(trie, texts, opt);

    BreakerTable table(texts, opt.preview_chars);
    std::vector<PromptMarks> marks(reqs.size());
    advice.divergence.resize(reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
        const RequestReuse& r = advice.recorded.requests[i];
        if (r.reuse != Reuse::Diverges) continue;
        const size_t src = size_t(r.source);
        advice.divergence[i] = divergence_text(texts[i], texts[src], r.shared_tokens, 24);
        // The source's whole cached sequence: the prompt may go on into what it generated.
        const auto found = scan_pair(prompt_view(seqs[i], lengths[i], texts[i]),
                                     PromptView{seqs[src], &texts[src]}, r.shared_tokens, opt.scan);
        for (const PairBreaker& b : found) {
            table.add(b, int64_t(i), int64_t(src));
            mark(marks[i], b, false);
            if (b.other_range.second <= lengths[src]) mark(marks[src], b, true);
        }
    }
    advice.breakers = table.sorted();
    inherit(marks, advice.recorded);
    choose_replacements(reqs, marks);
    advice.what_if = what_if(reqs, marks);
    return advice;
}

}  // namespace fluoro::app
