// Helpers shared by the engine/tensor tests: reading the hex-encoded JSON fixtures written by
// tests/reference/make_dequant_fixtures.py, comparing floats bit for bit, and a small SHA-256
// (the model-row fixture stores digests of dequantized rows).
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tensor/ggml_type.h"
#include "test_models.h"

namespace fluoro::test {

inline std::vector<uint8_t> bytes_from_hex(std::string_view hex) {
    auto nibble = [](char c) -> uint8_t {
        if (c >= '0' && c <= '9') return static_cast<uint8_t>(c - '0');
        if (c >= 'a' && c <= 'f') return static_cast<uint8_t>(c - 'a' + 10);
        if (c >= 'A' && c <= 'F') return static_cast<uint8_t>(c - 'A' + 10);
        ADD_FAILURE() << "bad hex digit '" << c << "'";
        return 0;
    };
    std::vector<uint8_t> out(hex.size() / 2);
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<uint8_t>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
    return out;
}

inline std::string hex_from_bytes(std::span<const uint8_t> bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    for (uint8_t b : bytes) {
        out += kDigits[b >> 4];
        out += kDigits[b & 15];
    }
    return out;
}

// Little-endian float32 values encoded as hex.
inline std::vector<float> floats_from_hex(std::string_view hex) {
    const std::vector<uint8_t> bytes = bytes_from_hex(hex);
    std::vector<float> out(bytes.size() / sizeof(float));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
    return out;
}

inline uint32_t float_bits(float f) {
    return std::bit_cast<uint32_t>(f);
}

// Equal bits, or both NaN.
inline bool same_float(float a, float b) {
    return float_bits(a) == float_bits(b) || (std::isnan(a) && std::isnan(b));
}

// Number of positions where the floats differ in bits; reports the first few with `what`.
inline int count_float_mismatches(std::span<const float> got, std::span<const float> want,
                                  const std::string& what) {
    EXPECT_EQ(got.size(), want.size()) << what;
    int mismatches = 0;
    for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
        if (same_float(got[i], want[i])) continue;
        if (++mismatches <= 3) {
            ADD_FAILURE() << what << ": element " << i << " is " << got[i] << " (0x" << std::hex
                          << float_bits(got[i]) << "), gguf says " << want[i] << " (0x"
                          << float_bits(want[i]) << ")" << std::dec;
        }
    }
    return mismatches;
}

inline nlohmann::json load_fixture(const std::string& file) {
    const std::filesystem::path path = fixtures_dir() / file;
    std::ifstream in(path);
    if (!in) {
        ADD_FAILURE() << "cannot open fixture " << path
                      << " (regenerate with tests/reference/make_dequant_fixtures.py)";
        return nlohmann::json::object();
    }
    return nlohmann::json::parse(in);
}

// The type whose ggml name (as in ggml_type.cpp: "q4_K", "bf16") is `name`.
inline std::optional<GgmlType> type_from_name(std::string_view name) {
    for (uint32_t id = 0; id < 64; ++id) {
        const TypeTraits* t = find_type_traits(id);
        if (t != nullptr && t->name == name) return t->type;
    }
    return std::nullopt;
}

// SHA-256 (FIPS 180-4), enough for comparing fixture digests.
inline std::string sha256_hex(std::span<const uint8_t> data) {
    static constexpr std::array<uint32_t, 64> k = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};
    std::array<uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    std::vector<uint8_t> msg(data.begin(), data.end());
    const uint64_t bit_len = static_cast<uint64_t>(data.size()) * 8;
    msg.push_back(0x80);
    while (msg.size() % 64 != 56) msg.push_back(0);
    for (int i = 7; i >= 0; --i) msg.push_back(static_cast<uint8_t>(bit_len >> (8 * i)));

    for (size_t chunk = 0; chunk < msg.size(); chunk += 64) {
        std::array<uint32_t, 64> w{};
        for (int i = 0; i < 16; ++i) {
            const uint8_t* p = &msg[chunk + 4 * i];
            w[i] = uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
        }
        for (int i = 16; i < 64; ++i) {
            const uint32_t s0 = std::rotr(w[i - 15], 7) ^ std::rotr(w[i - 15], 18) ^ w[i - 15] >> 3;
            const uint32_t s1 = std::rotr(w[i - 2], 17) ^ std::rotr(w[i - 2], 19) ^ w[i - 2] >> 10;
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        std::array<uint32_t, 8> v = h;
        for (int i = 0; i < 64; ++i) {
            const uint32_t s1 = std::rotr(v[4], 6) ^ std::rotr(v[4], 11) ^ std::rotr(v[4], 25);
            const uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
            const uint32_t t1 = v[7] + s1 + ch + k[i] + w[i];
            const uint32_t s0 = std::rotr(v[0], 2) ^ std::rotr(v[0], 13) ^ std::rotr(v[0], 22);
            const uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            v = {t1 + s0 + maj, v[0], v[1], v[2], v[3] + t1, v[4], v[5], v[6]};
        }
        for (int i = 0; i < 8; ++i) h[i] += v[i];
    }
    std::array<uint8_t, 32> digest{};
    for (int i = 0; i < 32; ++i) digest[i] = static_cast<uint8_t>(h[i / 4] >> (24 - 8 * (i % 4)));
    return hex_from_bytes(digest);
}

}  // namespace fluoro::test
