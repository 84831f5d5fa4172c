// SHA-256 (engine/core/sha256.h) against the FIPS 180-4 example digests, whole and in pieces
// that straddle blocks, and a file's digest equal to the bytes' digest.
#include "core/sha256.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "core/error.h"
#include "test_temp.h"

namespace fluoro {
namespace {

TEST(Sha256, KnownDigests) {
    const auto digest = [](const std::string& s) {
        Sha256 h;
        h.update({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
        return Sha256::hex(h.finish());
    };
    EXPECT_EQ(digest(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(digest(std::string(1000, 'a')),
              "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
    // Fed in pieces that straddle blocks: the same digest.
    Sha256 h;
    const std::string s(1000, 'a');
    for (size_t i = 0; i < s.size(); i += 37)
        h.update(
            {reinterpret_cast<const uint8_t*>(s.data()) + i, std::min<size_t>(37, s.size() - i)});
    EXPECT_EQ(Sha256::hex(h.finish()),
              "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

TEST(Sha256, FileDigestAndMissingFile) {
    const auto path = test::unique_temp_path("sha256_file.bin");
    {
        std::ofstream out(path, std::ios::binary);
        out << "abc";
    }
    EXPECT_EQ(sha256_file(path),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_THROW(sha256_file(test::unique_temp_path("no_such_file.bin")), Error);
}

// The cached digest is the file's, and a rewritten file (another size) is hashed again.
TEST(Sha256, CachedFileDigestFollowsTheFile) {
    const auto path = test::unique_temp_path("sha256_cached.bin");
    {
        std::ofstream out(path, std::ios::binary);
        out << "abc";
    }
    const std::string abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    EXPECT_EQ(sha256_file_cached(path), abc);
    EXPECT_EQ(sha256_file_cached(path), abc);
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << "abcd";
    }
    EXPECT_EQ(sha256_file_cached(path), sha256_file(path));
    EXPECT_NE(sha256_file_cached(path), abc);
    EXPECT_THROW(sha256_file_cached(test::unique_temp_path("no_such_file.bin")), Error);
}

}  // namespace
}  // namespace fluoro
