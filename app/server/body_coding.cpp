#include "server/body_coding.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>

namespace fluoro::app {

std::optional<BodyCoding> parse_body_coding(std::string_view v) {
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
    std::string s(v);
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    if (s == "identity") return BodyCoding::identity;
    if (s == "gzip" || s == "x-gzip") return BodyCoding::gzip;
    if (s == "deflate") return BodyCoding::deflate;
    return std::nullopt;
}

InflatedBody inflate_body(std::string_view in, BodyCoding coding, size_t limit) {
    InflatedBody r;
    if (coding == BodyCoding::identity) {
        if (in.size() > limit) {
            r.status = InflatedBody::Status::too_large;
            return r;
        }
        r.body.assign(in);
        return r;
    }
    z_stream z{};
    // 16 + 15: gzip wrapper, 32 KiB window; 15: the zlib wrapper of HTTP's "deflate".
    const int window_bits = coding == BodyCoding::gzip ? 16 + MAX_WBITS : MAX_WBITS;
    if (inflateInit2(&z, window_bits) != Z_OK) {
        r.status = InflatedBody::Status::corrupt;
        r.detail = "zlib could not start";
        return r;
    }
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = uInt(in.size());
    char out[1 << 14];
    auto fail = [&](InflatedBody::Status s, std::string detail) {
        inflateEnd(&z);
        InflatedBody f;
        f.status = s;
        f.detail = std::move(detail);
        return f;
    };
    for (;;) {
        z.next_out = reinterpret_cast<Bytef*>(out);
        z.avail_out = sizeof out;
        const int rc = inflate(&z, Z_NO_FLUSH);
        const size_t got = sizeof out - z.avail_out;
        if (got > limit - r.body.size()) return fail(InflatedBody::Status::too_large, {});
        r.body.append(out, got);
        if (rc == Z_STREAM_END) {
            if (z.avail_in == 0) break;
            // Another gzip member follows (RFC 1952 allows several); deflate has exactly one.
            if (coding != BodyCoding::gzip)
                return fail(InflatedBody::Status::corrupt, "bytes after the end of the stream");
            if (inflateReset(&z) != Z_OK)
                return fail(InflatedBody::Status::corrupt, "zlib could not restart");
            continue;
        }
        if (rc == Z_BUF_ERROR && z.avail_in == 0 && got == 0)
            return fail(InflatedBody::Status::corrupt, "the compressed stream is truncated");
        if (rc != Z_OK && rc != Z_BUF_ERROR)
            return fail(InflatedBody::Status::corrupt, z.msg ? z.msg : "invalid compressed data");
    }
    inflateEnd(&z);
    return r;
}

}  // namespace fluoro::app
