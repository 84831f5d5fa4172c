// SHA-256 (FIPS 180-4) of byte streams and files: the model file hash a stored run carries, so a
// run can be matched to the exact weights that produced it.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace fluoro {

class Sha256 {
  public:
    Sha256();
    void update(std::span<const uint8_t> data);
    std::array<uint8_t, 32> finish();  // once; the object is spent afterwards
    static std::string hex(const std::array<uint8_t, 32>& digest);

  private:
    void block(const uint8_t* p);
    std::array<uint32_t, 8> h_;
    std::array<uint8_t, 64> buf_{};
    size_t used_ = 0;
    uint64_t total_ = 0;
};

// Lowercase hex digest of a file's contents; throws fluoro::Error when it cannot be read.
std::string sha256_file(const std::filesystem::path& path);

}  // namespace fluoro
