// Compressed request bodies (Content-Encoding gzip / deflate), inflated under the same --max-body
// limit as any other body: inflation stops at the first byte past the limit, so a bomb (64 MiB of
// white space in 64 KiB) costs at most the limit in memory and is refused with 413. Other codings
// (br, zstd, compress, a list of several) are not understood and are refused with 415.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace fluoro::app {

enum class BodyCoding { identity, gzip, deflate };

// The coding a Content-Encoding value names ("gzip", "x-gzip", "deflate", "identity", case and
// surrounding white space ignored); nullopt for any other value, a list included.
std::optional<BodyCoding> parse_body_coding(std::string_view content_encoding);

struct InflatedBody {
    enum class Status { ok, too_large, corrupt };
    Status status = Status::ok;
    std::string body;    // the inflated bytes (ok); empty otherwise
    std::string detail;  // for corrupt: what zlib said
};

// Inflates `in` (gzip members, several allowed as RFC 1952 says; deflate = the zlib format RFC 9110
// names) into at most `limit` bytes. too_large as soon as the output would pass `limit`; corrupt
// for bad data, a truncated stream or bytes after the last member.
InflatedBody inflate_body(std::string_view in, BodyCoding coding, size_t limit);

}  // namespace fluoro::app
