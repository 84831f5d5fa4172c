#include "core/sha256.h"

#include <openssl/evp.h>

#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/error.h"

namespace fluoro {

void Sha256::Free::operator()(evp_md_ctx_st* c) const noexcept {
    EVP_MD_CTX_free(c);
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1)
        throw Error("sha256: OpenSSL could not start a digest");
}

Sha256::~Sha256() = default;

void Sha256::update(std::span<const uint8_t> data) {
    if (!data.empty() && EVP_DigestUpdate(ctx_.get(), data.data(), data.size()) != 1)
        throw Error("sha256: OpenSSL digest update failed");
}

std::array<uint8_t, 32> Sha256::finish() {
    std::array<uint8_t, 32> out{};
    unsigned int n = 0;
    if (EVP_DigestFinal_ex(ctx_.get(), out.data(), &n) != 1 || n != out.size())
        throw Error("sha256: OpenSSL digest final failed");
    return out;
}

std::string Sha256::hex(const std::array<uint8_t, 32>& digest) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (uint8_t b : digest) {
        s += digits[b >> 4];
        s += digits[b & 15];
    }
    return s;
}

std::string sha256_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot read " + path.string() + " to hash it");
    Sha256 h;
    std::vector<char> buf(1 << 20);
    while (in) {
        in.read(buf.data(), std::streamsize(buf.size()));
        const auto n = size_t(in.gcount());
        h.update({reinterpret_cast<const uint8_t*>(buf.data()), n});
    }
    if (in.bad()) throw Error("read error while hashing " + path.string());
    return Sha256::hex(h.finish());
}

std::string sha256_file_cached(const std::filesystem::path& path) {
    std::error_code size_error, time_error;
    const auto size = std::filesystem::file_size(path, size_error);
    const auto mtime = std::filesystem::last_write_time(path, time_error);
    if (size_error || time_error) return sha256_file(path);  // its error, or an uncached digest
    using Key = std::tuple<std::string, uintmax_t, int64_t>;
    const Key key{
        std::filesystem::absolute(path).lexically_normal().string(), size,
        std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count()};
    static std::mutex mutex;
    static std::map<Key, std::string> known;
    {
        const std::lock_guard lock(mutex);
        if (const auto it = known.find(key); it != known.end()) return it->second;
    }
    std::string digest = sha256_file(path);  // outside the lock: hashing takes a while
    const std::lock_guard lock(mutex);
    return known.emplace(key, std::move(digest)).first->second;
}

}  // namespace fluoro
