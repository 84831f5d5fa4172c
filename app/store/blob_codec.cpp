#include "store/blob_codec.h"

#include <bit>
#include <cstring>
#include <string>

#include "store/sqlite_db.h"

namespace fluoro::app {
namespace {

static_assert(std::endian::native == std::endian::little, "blobs are little-endian");

class Writer {
  public:
    template <class T>
    void put(T v) {
        const size_t at = out.size();
        out.resize(at + sizeof(T));
        std::memcpy(out.data() + at, &v, sizeof(T));
    }
    std::vector<uint8_t> out;
};

class Reader {
  public:
    Reader(std::span<const uint8_t> b, const char* what) : b_(b), what_(what) {}
    template <class T>
    T get() {
        if (pos_ + sizeof(T) > b_.size())
            throw StoreError(std::string("malformed ") + what_ + " blob: truncated at byte " +
                                 std::to_string(pos_),
                             SQLITE_CORRUPT);
        T v;
        std::memcpy(&v, b_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    size_t left() const { return b_.size() - pos_; }
    void expect_multiple(size_t n) const {
        if (left() % n != 0)
            throw StoreError(
                std::string("malformed ") + what_ + " blob: " + std::to_string(left()) +
                    " bytes is not a whole number of " + std::to_string(n) + "-byte records",
                SQLITE_CORRUPT);
    }

  private:
    std::span<const uint8_t> b_;
    const char* what_;
    size_t pos_ = 0;
};

}  // namespace

std::vector<uint8_t> encode_top(std::span<const TokenProb> top) {
    Writer w;
    for (const auto& t : top) {
        w.put<int32_t>(t.id);
        w.put<float>(t.logprob);
    }
    return std::move(w.out);
}

std::vector<TokenProb> decode_top(std::span<const uint8_t> blob) {
    Reader r(blob, "top-N");
    r.expect_multiple(8);
    std::vector<TokenProb> out(blob.size() / 8);
    for (auto& t : out) {
        t.id = r.get<int32_t>();
        t.logprob = r.get<float>();
    }
    return out;
}

std::vector<uint8_t> encode_op_ns(const CategoryTimes& t) {
    Writer w;
    for (int64_t v : t) w.put<int64_t>(v);
    return std::move(w.out);
}

CategoryTimes decode_op_ns(std::span<const uint8_t> blob) {
    Reader r(blob, "op_ns");
    CategoryTimes t{};
    // Older or newer files may hold fewer or more categories: read what both know.
    for (size_t i = 0; i < kTimeCategories && r.left() >= 8; ++i) t[i] = r.get<int64_t>();
    return t;
}

std::vector<uint8_t> encode_drafted(std::span<const DraftToken> d) {
    Writer w;
    for (const auto& t : d) {
        w.put<int32_t>(t.id);
        w.put<float>(t.q);
        w.put<float>(t.p);
        w.put<uint8_t>(t.accepted ? 1 : 0);
    }
    return std::move(w.out);
}

std::vector<DraftToken> decode_drafted(std::span<const uint8_t> blob) {
    Reader r(blob, "drafted");
    r.expect_multiple(13);
    std::vector<DraftToken> out(blob.size() / 13);
    for (auto& t : out) {
        t.id = r.get<int32_t>();
        t.q = r.get<float>();
        t.p = r.get<float>();
        t.accepted = r.get<uint8_t>() != 0;
    }
    return out;
}

std::vector<uint8_t> encode_kv(const KvSnapshot& s) {
    Writer w;
    w.put<int32_t>(s.block_tokens);
    w.put<int64_t>(s.bytes_per_token);
    for (const auto& b : s.blocks) {
        w.put<int32_t>(b.owner);
        w.put<uint8_t>(uint8_t(b.state));
        w.put<int32_t>(b.tokens);
    }
    return std::move(w.out);
}

void decode_kv(std::span<const uint8_t> blob, KvSnapshot& s) {
    Reader r(blob, "kv");
    s.block_tokens = r.get<int32_t>();
    s.bytes_per_token = r.get<int64_t>();
    r.expect_multiple(9);
    s.blocks.resize(r.left() / 9);
    for (auto& b : s.blocks) {
        b.owner = r.get<int32_t>();
        const auto state = r.get<uint8_t>();
        if (state > uint8_t(KvBlockState::Evicted))
            throw StoreError("malformed kv blob: block state " + std::to_string(state),
                             SQLITE_CORRUPT);
        b.state = KvBlockState(state);
        b.tokens = r.get<int32_t>();
    }
}

std::vector<uint8_t> encode_attention(const AttentionSnapshot& s) {
    Writer w;
    w.put<int32_t>(s.layer);
    w.put<int32_t>(s.head);
    w.put<int64_t>(s.first_row);
    w.put<int64_t>(s.n_rows);
    w.put<int64_t>(s.n_cols);
    for (float v : s.weights) w.put<float>(v);
    return std::move(w.out);
}

void decode_attention(std::span<const uint8_t> blob, AttentionSnapshot& s) {
    Reader r(blob, "attention");
    s.layer = r.get<int32_t>();
    s.head = r.get<int32_t>();
    s.first_row = r.get<int64_t>();
    s.n_rows = r.get<int64_t>();
    s.n_cols = r.get<int64_t>();
    r.expect_multiple(4);
    s.weights.resize(r.left() / 4);
    for (float& v : s.weights) v = r.get<float>();
    if (!s.shape_ok())
        throw StoreError("malformed attention blob: shape " + std::to_string(s.n_rows) + " x " +
                             std::to_string(s.n_cols) + " does not match its " +
                             std::to_string(s.weights.size()) + " weights",
                         SQLITE_CORRUPT);
}

std::vector<uint8_t> encode_ids(std::span<const int32_t> ids) {
    Writer w;
    for (int32_t id : ids) w.put<int32_t>(id);
    return std::move(w.out);
}

std::vector<int32_t> decode_ids(std::span<const uint8_t> blob) {
    Reader r(blob, "prompt_ids");
    r.expect_multiple(4);
    std::vector<int32_t> out(blob.size() / 4);
    for (auto& id : out) id = r.get<int32_t>();
    return out;
}

std::vector<uint8_t> encode_pieces(std::span<const std::string> pieces) {
    Writer w;
    for (const auto& p : pieces) {
        w.put<uint32_t>(uint32_t(p.size()));
        w.out.insert(w.out.end(), p.begin(), p.end());
    }
    return std::move(w.out);
}

std::vector<std::string> decode_pieces(std::span<const uint8_t> blob) {
    Reader r(blob, "prompt_pieces");
    std::vector<std::string> out;
    while (r.left() > 0) {
        const uint32_t n = r.get<uint32_t>();
        if (n > r.left())
            throw StoreError("malformed prompt_pieces blob: piece " + std::to_string(out.size()) +
                                 " claims " + std::to_string(n) + " bytes, " +
                                 std::to_string(r.left()) + " left",
                             SQLITE_CORRUPT);
        std::string p(n, '\0');
        for (auto& ch : p) ch = char(r.get<uint8_t>());
        out.push_back(std::move(p));
    }
    return out;
}

std::vector<uint8_t> encode_head_stats(std::span<const AttentionHeadStats> heads) {
    Writer w;
    for (const auto& h : heads) {
        w.put<float>(h.entropy);
        w.put<float>(h.top_k_mass);
        w.put<float>(h.below_threshold);
        w.put<float>(h.sink_mass);
    }
    return std::move(w.out);
}

std::vector<AttentionHeadStats> decode_head_stats(std::span<const uint8_t> blob) {
    Reader r(blob, "attention_stats heads");
    r.expect_multiple(16);
    std::vector<AttentionHeadStats> out(blob.size() / 16);
    for (auto& h : out) {
        h.entropy = r.get<float>();
        h.top_k_mass = r.get<float>();
        h.below_threshold = r.get<float>();
        h.sink_mass = r.get<float>();
    }
    return out;
}

std::vector<uint8_t> encode_positions(std::span<const int64_t> positions) {
    Writer w;
    for (size_t i = 0; i < positions.size();) {
        size_t j = i + 1;
        while (j < positions.size() && positions[j] == positions[j - 1] + 1) ++j;
        w.put<int64_t>(positions[i]);
        w.put<int64_t>(int64_t(j - i));
        i = j;
    }
    return std::move(w.out);
}

std::vector<int64_t> decode_positions(std::span<const uint8_t> blob, size_t max_values) {
    Reader r(blob, "positions");
    r.expect_multiple(16);
    std::vector<int64_t> out;
    while (r.left() > 0) {
        const auto first = r.get<int64_t>();
        const auto count = r.get<int64_t>();
        if (count < 1 || uint64_t(count) > max_values - out.size())
            throw StoreError("malformed positions blob: a run of " + std::to_string(count) +
                                 " positions (at most " + std::to_string(max_values - out.size()) +
                                 " left)",
                             SQLITE_CORRUPT);
        for (int64_t k = 0; k < count; ++k) out.push_back(first + k);
    }
    return out;
}

std::vector<uint8_t> encode_experts(const ExpertRouting* r) {
    Writer w;
    if (!r) return std::move(w.out);
    w.put<int32_t>(r->n_layer);
    w.put<int32_t>(r->n_expert);
    w.put<int32_t>(r->n_used);
    w.put<int64_t>(r->n_tokens);
    for (size_t i = 0; i < r->experts.size(); ++i) {
        w.put<int16_t>(int16_t(r->experts[i]));
        w.put<float>(i < r->weights.size() ? r->weights[i] : 0.0f);
    }
    return std::move(w.out);
}

std::shared_ptr<const ExpertRouting> decode_experts(std::span<const uint8_t> blob) {
    if (blob.empty()) return nullptr;
    Reader r(blob, "experts");
    auto out = std::make_shared<ExpertRouting>();
    out->n_layer = r.get<int32_t>();
    out->n_expert = r.get<int32_t>();
    out->n_used = r.get<int32_t>();
    out->n_tokens = r.get<int64_t>();
    const auto bad = [](const std::string& why) {
        return StoreError("malformed experts blob: " + why, SQLITE_CORRUPT);
    };
    // Sizes first, from the blob's own length, so a forged header allocates nothing. int16 ids
    // hold 32767 experts (the largest 2026 files route over 384).
    r.expect_multiple(6);
    const size_t n = r.left() / 6;
    const bool sane = out->n_layer > 0 && out->n_used > 0 && out->n_tokens >= 0 &&
                      out->n_expert > 0 && out->n_expert <= 32767;
    // n == n_layer * n_used * n_tokens, by division: the product of a forged header may overflow.
    const uint64_t per_token = sane ? uint64_t(out->n_layer) * uint64_t(out->n_used) : 1;
    if (!sane || n % per_token != 0 || n / per_token != uint64_t(out->n_tokens))
        throw bad(std::to_string(n) + " choices for " + std::to_string(out->n_layer) +
                  " layers x " + std::to_string(out->n_tokens) + " tokens x " +
                  std::to_string(out->n_used) + " of " + std::to_string(out->n_expert) +
                  " experts");
    out->experts.resize(n);
    out->weights.resize(n);
    for (size_t i = 0; i < n; ++i) {
        out->experts[i] = r.get<int16_t>();
        out->weights[i] = r.get<float>();
    }
    if (const std::string why = expert_routing_error(*out); !why.empty()) throw bad(why);
    return out;
}

std::vector<uint8_t> encode_trace(const StepTrace* t) {
    Writer w;
    if (!t) return std::move(w.out);
    w.put<uint32_t>(uint32_t(t->names.size()));
    for (const std::string& n : t->names) {
        w.put<uint32_t>(uint32_t(n.size()));
        w.out.insert(w.out.end(), n.begin(), n.end());
    }
    w.put<int32_t>(t->threads);
    w.put<int64_t>(t->dropped);
    w.put<uint32_t>(uint32_t(t->ops.size()));
    for (const OpSpan& op : t->ops) {
        w.put<int64_t>(op.start_ns);
        w.put<int64_t>(op.end_ns);
        w.put<int32_t>(op.name);
        w.put<int32_t>(op.layer);
        w.put<int32_t>(op.rows);
        w.put<uint8_t>(uint8_t(op.category));
        w.put<double>(op.bytes);
        w.put<double>(op.flops);
        w.put<int32_t>(op.weight_type);
        w.put<int32_t>(op.shape[0]);
        w.put<int32_t>(op.shape[1]);
    }
    w.put<uint32_t>(uint32_t(t->workers.size()));
    for (const WorkerBusy& b : t->workers) {
        w.put<int64_t>(b.start_ns);
        w.put<int64_t>(b.end_ns);
        w.put<int32_t>(b.worker);
        w.put<int32_t>(b.tasks);
    }
    return std::move(w.out);
}

std::shared_ptr<const StepTrace> decode_trace(std::span<const uint8_t> blob) {
    if (blob.empty()) return nullptr;
    Reader r(blob, "trace");
    const auto bad = [](const std::string& why) {
        return StoreError("malformed trace blob: " + why, SQLITE_CORRUPT);
    };
    // Each count is checked against what is left, so a forged count allocates nothing.
    const auto count = [&](size_t record, const char* what) {
        const uint32_t n = r.get<uint32_t>();
        if (uint64_t(n) * record > r.left())
            throw bad(std::to_string(n) + " " + what + " in " + std::to_string(r.left()) +
                      " bytes");
        return size_t(n);
    };
    auto t = std::make_shared<StepTrace>();
    t->names.resize(count(4, "names"));
    for (std::string& n : t->names) {
        n.resize(count(1, "name bytes"));
        for (char& c : n) c = char(r.get<uint8_t>());
    }
    t->threads = r.get<int32_t>();
    t->dropped = r.get<int64_t>();
    t->ops.resize(count(57, "ops"));
    for (OpSpan& op : t->ops) {
        op.start_ns = r.get<int64_t>();
        op.end_ns = r.get<int64_t>();
        op.name = r.get<int32_t>();
        op.layer = r.get<int32_t>();
        op.rows = r.get<int32_t>();
        op.category = TimeCategory(r.get<uint8_t>());
        op.bytes = r.get<double>();
        op.flops = r.get<double>();
        op.weight_type = r.get<int32_t>();
        op.shape[0] = r.get<int32_t>();
        op.shape[1] = r.get<int32_t>();
    }
    t->workers.resize(count(24, "worker spans"));
    for (WorkerBusy& b : t->workers) {
        b.start_ns = r.get<int64_t>();
        b.end_ns = r.get<int64_t>();
        b.worker = r.get<int32_t>();
        b.tasks = r.get<int32_t>();
    }
    if (r.left() != 0) throw bad(std::to_string(r.left()) + " bytes after the worker spans");
    if (const std::string why = step_trace_error(*t); !why.empty()) throw bad(why);
    return t;
}

}  // namespace fluoro::app
