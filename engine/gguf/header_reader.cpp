#include "gguf/header_reader.h"

#include <string>

namespace fluoro::gguf {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32

std::string printable(uint32_t word) {
    std::string s;
    for (int i = 0; i < 4; ++i) {
        const char ch = static_cast<char>((word >> (8 * i)) & 0xFF);
        s += (ch >= 0x20 && ch < 0x7F) ? ch : '.';
    }
    return s;
}

void check_magic(ByteCursor& c) {
    if (c.size() == 0) c.fail(0, "the file is empty", "a GGUF file starting with \"GGUF\"");
    if (c.size() < 4) {
        c.fail(0, "the file is only " + std::to_string(c.size()) + " bytes long",
               "a GGUF file starting with \"GGUF\"");
    }
    const uint32_t magic = c.u32("the magic");
    if (magic != kMagic)
        c.fail(0, "bad magic \"" + printable(magic) + "\"", "\"GGUF\" (is this a GGUF file?)");
}

void check_version(ByteCursor& c, uint32_t version) {
    const uint64_t at = 4;
    if (version == 2 || version == 3) return;
    if (version == 1)
        c.fail(at, "GGUF version 1 is no longer supported",
               "version 2 or 3 (re-convert the model)");
    if (version == (2u << 24) || version == (3u << 24))
        c.fail(at, "big-endian GGUF is not supported", "a little-endian GGUF file");
    c.fail(at,
           "unsupported GGUF version " + std::to_string(version) +
               (version > 3 ? " (newer than this reader)" : ""),
           "version 2 or 3");
}

}  // namespace

Header read_header(ByteCursor& c) {
    check_magic(c);
    Header h;
    h.version = c.u32("the version");
    check_version(c, h.version);
    h.n_tensors_at = c.pos();
    h.n_tensors = c.u64("the tensor count");
    const uint64_t n_kv_at = c.pos();
    h.n_kv = c.u64("the metadata count");
    c.check_count(h.n_tensors_at, h.n_tensors, kMinTensorEntryBytes, "tensor count");
    c.check_count(n_kv_at, h.n_kv, kMinKvBytes, "metadata count");
    return h;
}

}  // namespace fluoro::gguf
