#include "core/sha256.h"

#include <openssl/evp.h>

#include <fstream>
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

}  // namespace fluoro
