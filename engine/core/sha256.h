// SHA-256 (FIPS 180-4) of byte streams and files: the model file hash a stored run carries, so a
// run can be matched to the exact weights that produced it, and the key of a persisted prefix
// cache. OpenSSL's libcrypto computes it (SHA extensions where the CPU has them: ~5x faster than
// the portable code this replaced, which matters when a multi-GB model is hashed at load).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace fluoro {

class Sha256 {
  public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;
    void update(std::span<const uint8_t> data);
    std::array<uint8_t, 32> finish();  // once; the object is spent afterwards
    static std::string hex(const std::array<uint8_t, 32>& digest);

  private:
    struct Free {
        void operator()(evp_md_ctx_st* c) const noexcept;
    };
    std::unique_ptr<evp_md_ctx_st, Free> ctx_;
};

// Lowercase hex digest of a file's contents; throws fluoro::Error when it cannot be read.
std::string sha256_file(const std::filesystem::path& path);

// sha256_file(path), remembered for the rest of the process under the file's path, size and
// modification time (a rewritten file is hashed again): the session store and the persisted
// prefix cache both key on the model's hash, and a model is hundreds of megabytes. Thread-safe.
std::string sha256_file_cached(const std::filesystem::path& path);

}  // namespace fluoro
