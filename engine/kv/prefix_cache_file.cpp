#include "kv/prefix_cache_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <span>

#include "core/error.h"
#include "kv/kv_row_check.h"
#include "kv/paged_kv.h"
#include "kv/prefix_cache.h"

namespace fluoro {
namespace {

constexpr char kMagic[8] = {'F', 'L', 'U', 'O', 'R', 'O', 'P', 'C'};
constexpr uint32_t kNoParent = 0xFFFFFFFFu;

uint32_t crc32_of(std::span<const std::byte> data) {
    return uint32_t(
        crc32_z(crc32_z(0, nullptr, 0), reinterpret_cast<const Bytef*>(data.data()), data.size()));
}

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Little-endian appends (every platform we build for is little-endian; the static_assert keeps
// it so).
static_assert(std::endian::native == std::endian::little);
template <typename T>
void put(std::vector<std::byte>& out, T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), p, p + sizeof v);
}

// Bounds-checked reads over a buffer; every failure names the field and the byte offset.
class Reader {
  public:
    Reader(std::span<const std::byte> data, size_t base) : data_(data), base_(base) {}
    template <typename T>
    T get(const char* what) {
        T v;
        std::memcpy(&v, take(sizeof v, what).data(), sizeof v);
        return v;
    }
    std::span<const std::byte> take(size_t n, const char* what) {
        if (n > data_.size() - pos_)
            throw FormatError(std::string("truncated at byte ") + std::to_string(base_ + pos_) +
                              " (" + what + ": " + std::to_string(n) + " bytes, " +
                              std::to_string(data_.size() - pos_) + " left)");
        const auto s = data_.subspan(pos_, n);
        pos_ += n;
        return s;
    }
    size_t offset() const { return base_ + pos_; }
    size_t left() const { return data_.size() - pos_; }

  private:
    std::span<const std::byte> data_;
    size_t base_, pos_ = 0;
};

// Rows [begin, end) of one layer's K (k = true) or V of sequence seq as the file stores them,
// token-major (a row's heads side by side, rows in order), in pieces of consecutive memory:
// f(device pointer, bytes). A token-major cache gives whole runs of rows; a head-major one, each
// run's rows head by head. Values read from the keys' rows have none of their own to store.
template <typename F>
void for_each_run(const PagedKvCache& kv, bool k, int64_t layer, int64_t seq, int64_t begin,
                  int64_t end, F&& f) {
    const KvShape& sh = kv.shape();
    if (!k && sh.values_in_keys()) return;
    const size_t row = k ? sh.k_row_bytes(layer) : sh.v_row_bytes(layer);
    const size_t head = k ? sh.k_head_bytes() : sh.v_head_bytes();
    for (int64_t pos = begin; pos < end;) {
        const KvCache::Run r =
            k ? kv.k_run(layer, seq, pos, end - pos) : kv.v_run(layer, seq, pos, end - pos);
        if (sh.head_major) {
            for (int64_t i = 0; i < r.rows; ++i)
                for (int64_t h = 0; h < sh.n_head_kv[size_t(layer)]; ++h)
                    f(const_cast<std::byte*>(r.data + size_t(i) * r.stride +
                                             size_t(h) * r.head_stride),
                      head);
            pos += std::max<int64_t>(1, r.rows);
            continue;
        }
        const int64_t rows = std::max<int64_t>(1, r.stride == row ? r.rows : 1);
        f(const_cast<std::byte*>(r.data), size_t(rows) * row);
        pos += rows;
    }
}

size_t rows_bytes(const KvShape& shape, int64_t rows) {
    size_t per_token = 0;
    for (int64_t l = 0; l < shape.n_layer; ++l)
        per_token += shape.k_row_bytes(l) + shape.v_stored_row_bytes(l);
    return per_token * size_t(rows);
}

struct ParsedEntry {
    uint32_t parent = kNoParent;
    uint32_t shared = 0;
    std::vector<int32_t> tokens;      // copied: in the file they need not be 4-byte aligned
    std::span<const std::byte> rows;  // per layer: K rows then V rows of [shared, n)
};

void write_file_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes) {
    const std::filesystem::path tmp =
        path.string() + ".tmp-" + std::to_string(static_cast<long>(::getpid()));
    const auto fail = [&](const std::string& what) {
        const int err = errno;
        std::error_code ec;
        std::filesystem::remove(tmp, ec);
        throw Error("prefix cache file " + path.string() + ": " + what + ": " + std::strerror(err));
    };
    if (path.has_parent_path()) {
        std::error_code ec;
        std::filesystem::create_directories(path.parent_path(), ec);
    }
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fail("cannot create " + tmp.string());
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            ::close(fd);
            fail("write failed");
        }
        done += size_t(n);
    }
    if (::fsync(fd) != 0) {
        ::close(fd);
        fail("fsync failed");
    }
    if (::close(fd) != 0) fail("close failed");
    if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename the new file into place");
}

// The whole file, read only when it is a regular file that starts like one of ours: a directory,
// a FIFO (whose open would block the start of `serve`) or a device at the path is refused before
// it is opened for reading, and a foreign file of any size costs one small read.
std::vector<std::byte> read_cache_file(const std::filesystem::path& path,
                                       const std::string& where) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw Error(where + "cannot open it: " + std::strerror(errno));
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw Error(where + "cannot stat it: " + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        throw FormatError(where + "not a regular file (a directory, FIFO, socket or device)");
    const auto read_all = [&](std::byte* dst, size_t n, const char* what) {
        size_t done = 0;
        while (done < n) {
            const ssize_t r = ::read(fd, dst + done, n - done);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) throw Error(where + "read failed: " + std::strerror(errno));
            if (r == 0)
                throw FormatError(where + "truncated at byte " + std::to_string(done) + " (" +
                                  what + ")");
            done += size_t(r);
        }
    };
    const size_t size = size_t(st.st_size);
    if (size < sizeof kMagic)
        throw FormatError(where + "truncated at byte 0 (magic: " + std::to_string(sizeof kMagic) +
                          " bytes, " + std::to_string(size) + " left)");
    std::vector<std::byte> file(sizeof kMagic);
    read_all(file.data(), sizeof kMagic, "magic");
    if (std::memcmp(file.data(), kMagic, sizeof kMagic) != 0)
        throw FormatError(where + "not a Fluoroscope prefix cache file (bad magic)");
    try {
        file.resize(size);
    } catch (const std::bad_alloc&) {
        throw Error(where + "no memory to read its " + std::to_string(size) + " bytes");
    }
    read_all(file.data() + sizeof kMagic, size - sizeof kMagic, "body");
    return file;
}

// An entry's rows (per layer: K rows, then V rows) must be finite: a NaN in one restored row
// turns the logits of every request sharing that prefix into NaN, restart after restart.
void check_rows_finite(const KvShape& shape, std::span<const std::byte> rows, int64_t n_rows,
                       const std::string& entry) {
    size_t at = 0;
    for (int64_t l = 0; l < shape.n_layer; ++l) {
        for (const bool k : {true, false}) {
            const size_t row = k ? shape.k_row_bytes(l) : shape.v_stored_row_bytes(l);
            if (row == 0) continue;  // values read from the keys' rows
            const auto part = rows.subspan(at, row * size_t(n_rows));
            const KvType type = k ? shape.type.k : shape.type.v;
            if (const auto bad = first_non_finite_kv(type, part)) {
                const size_t per_row = row / kv_type_info(type).block_bytes;
                throw FormatError(entry + "layer " + std::to_string(l) + (k ? " K" : " V") +
                                  " row " + std::to_string(*bad / per_row) +
                                  " holds a non-finite value (NaN or infinity)");
            }
            at += part.size();
        }
    }
}

}  // namespace

std::string PrefixCacheKey::text() const {
    std::string s;
    for (const auto& [name, value] : fields) s += name + "=" + value + "\n";
    return s;
}

PrefixCacheFileStats save_prefix_cache(const PrefixCache& cache, const PrefixCacheKey& key,
                                       const std::filesystem::path& path,
                                       std::span<const PrefixCacheExtra> extra) {
    const auto t0 = std::chrono::steady_clock::now();
    const PagedKvCache& kv = cache.kv();
    const KvShape& shape = kv.shape();
    const KvMemory& mem = kv.memory();
    const auto all = cache.entries();
    const std::vector<int64_t> slots = cache.slots_by_recency();

    std::vector<PrefixCacheExtra> sources;  // every entry, then the extra prefixes
    for (const int64_t slot : slots)
        sources.push_back({all[size_t(slot - cache.first_slot())], slot});
    for (const PrefixCacheExtra& e : extra) {
        if (e.tokens.empty()) continue;
        if (e.seq < 0 || e.seq >= shape.n_seq || int64_t(e.tokens.size()) > kv.length(e.seq))
            throw Error("prefix cache save: sequence " + std::to_string(e.seq) + " does not hold " +
                        std::to_string(e.tokens.size()) + " tokens");
        sources.push_back(e);
    }

    PrefixCacheFileStats st;
    std::vector<std::byte> body;
    put<uint32_t>(body, uint32_t(sources.size()));
    std::vector<std::span<const int32_t>> written;
    for (const auto& [tokens, slot] : sources) {
        // The earlier entry sharing the longest prefix with this one.
        uint32_t parent = kNoParent, shared = 0;
        for (size_t i = 0; i < written.size(); ++i) {
            const auto& w = written[i];
            const size_t n = std::min(w.size(), tokens.size());
            size_t lcp = 0;
            while (lcp < n && w[lcp] == tokens[lcp]) ++lcp;
            if (lcp > shared) parent = uint32_t(i), shared = uint32_t(lcp);
        }
        put<uint32_t>(body, parent);
        put<uint32_t>(body, shared);
        put<uint32_t>(body, uint32_t(tokens.size()));
        const auto* tp = reinterpret_cast<const std::byte*>(tokens.data());
        body.insert(body.end(), tp, tp + tokens.size() * sizeof(int32_t));
        const int64_t n = int64_t(tokens.size());
        for (int64_t l = 0; l < shape.n_layer; ++l) {
            for (const bool k : {true, false}) {
                for_each_run(kv, k, l, slot, shared, n, [&](std::byte* src, size_t bytes) {
                    const size_t at = body.size();
                    body.resize(at + bytes);
                    const_cast<KvMemory&>(mem).to_host(body.data() + at, src, bytes);
                });
            }
        }
        written.push_back(tokens);
        ++st.entries;
        st.tokens += n;
        st.rows += n - shared;
    }

    std::vector<std::byte> file;
    const auto* m = reinterpret_cast<const std::byte*>(kMagic);
    file.insert(file.end(), m, m + sizeof kMagic);
    put<uint32_t>(file, kPrefixCacheFileVersion);
    const std::string key_text = key.text();
    put<uint32_t>(file, uint32_t(key_text.size()));
    const auto* kp = reinterpret_cast<const std::byte*>(key_text.data());
    file.insert(file.end(), kp, kp + key_text.size());
    put<uint32_t>(file, crc32_of({kp, key_text.size()}));
    put<uint64_t>(file, uint64_t(body.size()));
    put<uint32_t>(file, crc32_of(body));
    file.insert(file.end(), body.begin(), body.end());
    write_file_atomically(path, file);
    st.file_bytes = file.size();
    st.ms = ms_since(t0);
    return st;
}

PrefixCacheFileStats restore_prefix_cache(PrefixCache& cache, int64_t scratch_seq,
                                          const PrefixCacheKey& key,
                                          const std::filesystem::path& path) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string where = "prefix cache file " + path.string() + ": ";
    PagedKvCache& kv = cache.kv();
    const KvShape& shape = kv.shape();
    if (scratch_seq < 0 || scratch_seq >= shape.n_seq || kv.length(scratch_seq) != 0 ||
        (scratch_seq >= cache.first_slot() &&
         scratch_seq < cache.first_slot() + cache.slot_count()))
        throw Error("prefix cache restore: sequence " + std::to_string(scratch_seq) +
                    " is not an empty sequence outside the cache's slots");

    const std::vector<std::byte> file = read_cache_file(path, where);

    std::vector<ParsedEntry> entries;
    uint64_t rows_total = 0;
    try {
        Reader r(file, 0);
        const auto magic = r.take(sizeof kMagic, "magic");
        if (std::memcmp(magic.data(), kMagic, sizeof kMagic) != 0)
            throw FormatError("not a Fluoroscope prefix cache file (bad magic)");
        const uint32_t version = r.get<uint32_t>("version");
        if (version != kPrefixCacheFileVersion)
            throw FormatError("version " + std::to_string(version) + ", this build reads " +
                              std::to_string(kPrefixCacheFileVersion));
        const uint32_t key_bytes = r.get<uint32_t>("key length");
        const auto key_raw = r.take(key_bytes, "key");
        if (r.get<uint32_t>("key checksum") != crc32_of(key_raw))
            throw FormatError("header checksum mismatch (corrupt file)");
        const std::string file_key(reinterpret_cast<const char*>(key_raw.data()), key_raw.size());
        const std::string want = key.text();
        if (file_key != want) {
            // Name the first field that differs: the user learns why the cache was not used.
            std::string why = "made for another model or settings";
            for (const auto& [name, value] : key.fields) {
                const std::string line = name + "=";
                const size_t at = file_key.find("\n" + line) != std::string::npos
                                      ? file_key.find("\n" + line) + 1
                                      : (file_key.starts_with(line) ? 0 : std::string::npos);
                if (at == std::string::npos) {
                    why = "has no " + name;
                    break;
                }
                const size_t end = file_key.find('\n', at);
                const std::string got = file_key.substr(at + line.size(), end - at - line.size());
                if (got != value) {
                    why = name + " is " + got + ", here " + value;
                    break;
                }
            }
            throw FormatError("foreign cache (" + why + ")");
        }
        const uint64_t body_bytes = r.get<uint64_t>("body length");
        const uint32_t body_crc = r.get<uint32_t>("body checksum");
        if (body_bytes != r.left())
            throw FormatError("body is " + std::to_string(r.left()) + " bytes, header says " +
                              std::to_string(body_bytes) + " (truncated or extended file)");
        const auto body = r.take(size_t(body_bytes), "body");
        if (crc32_of(body) != body_crc) throw FormatError("body checksum mismatch (corrupt file)");

        Reader b(body, r.offset() - body.size());
        const uint32_t n_entries = b.get<uint32_t>("entry count");
        const int64_t n_vocab_limit = [&] {
            for (const auto& [name, value] : key.fields)
                if (name == "n_vocab") return int64_t(std::stoll(value));
            return int64_t(INT32_MAX);
        }();
        for (uint32_t i = 0; i < n_entries; ++i) {
            const std::string e = "entry " + std::to_string(i) + ": ";
            ParsedEntry pe;
            pe.parent = b.get<uint32_t>("parent");
            pe.shared = b.get<uint32_t>("shared tokens");
            const uint32_t n = b.get<uint32_t>("token count");
            if (n == 0 || int64_t(n) > shape.n_ctx)
                throw FormatError(e + std::to_string(n) + " tokens (context is " +
                                  std::to_string(shape.n_ctx) + ")");
            if (pe.parent == kNoParent ? pe.shared != 0
                                       : (pe.parent >= i || pe.shared > n ||
                                          pe.shared > entries[pe.parent].tokens.size()))
                throw FormatError(e + "bad parent " + std::to_string(pe.parent) + " / shared " +
                                  std::to_string(pe.shared));
            const auto tb = b.take(size_t(n) * sizeof(int32_t), "tokens");
            pe.tokens.resize(n);
            std::memcpy(pe.tokens.data(), tb.data(), tb.size());
            for (uint32_t t = 0; t < n; ++t)
                if (pe.tokens[t] < 0 || pe.tokens[t] >= n_vocab_limit)
                    throw FormatError(e + "token " + std::to_string(t) + " is id " +
                                      std::to_string(pe.tokens[t]) + ", outside the vocabulary");
            if (pe.parent != kNoParent &&
                !std::equal(pe.tokens.begin(), pe.tokens.begin() + pe.shared,
                            entries[pe.parent].tokens.begin()))
                throw FormatError(e + "its shared prefix differs from its parent's tokens");
            pe.rows = b.take(rows_bytes(shape, n - pe.shared), "K/V rows");
            check_rows_finite(shape, pe.rows, n - pe.shared, e);
            rows_total += n - pe.shared;
            entries.push_back(std::move(pe));
        }
        if (b.left() != 0)
            throw FormatError(std::to_string(b.left()) + " unexpected bytes after the entries");
    } catch (const FormatError& e) {
        throw FormatError(where + e.what());
    }

    // The file is sound: build each entry in the scratch sequence, then let the cache take it.
    PrefixCacheFileStats st;
    st.file_bytes = file.size();
    st.rows = int64_t(rows_total);
    const KvMemory& mem = kv.memory();
    for (const ParsedEntry& pe : entries) {
        const int64_t n = int64_t(pe.tokens.size());
        try {
            if (pe.shared > 0) {
                PrefixCache::Match m =
                    cache.peek(std::span<const int32_t>(pe.tokens).first(pe.shared));
                if (m.tokens < int64_t(pe.shared)) {  // its parent was evicted to make room
                    ++st.skipped;
                    continue;
                }
                m.tokens = pe.shared;
                cache.restore(m, scratch_seq);
            }
            const int64_t bt = kv.block_tokens();
            cache.ensure_free_blocks((n - pe.shared + bt - 1) / bt + 1);
            kv.prepare(scratch_seq, pe.shared, n);
            size_t at = 0;
            for (int64_t l = 0; l < shape.n_layer; ++l) {
                for (const bool k : {true, false}) {
                    for_each_run(
                        kv, k, l, scratch_seq, pe.shared, n, [&](std::byte* dst, size_t bytes) {
                            const_cast<KvMemory&>(mem).from_host(dst, pe.rows.data() + at, bytes);
                            at += bytes;
                        });
                }
            }
            kv.set_length(scratch_seq, n);
            cache.store(pe.tokens, scratch_seq);
            kv.set_length(scratch_seq, 0);
            ++st.entries;
            st.tokens += n;
        } catch (const Error&) {  // the pool is too small for it now
            kv.set_length(scratch_seq, 0);
            ++st.skipped;
        }
    }
    st.ms = ms_since(t0);
    return st;
}

}  // namespace fluoro
