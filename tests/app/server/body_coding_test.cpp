// Compressed request bodies: inflated exactly up to the limit, refused one byte past it.
#include "server/body_coding.h"

#include <zlib.h>

#include <gtest/gtest.h>

#include <string>

namespace fluoro::app {
namespace {

std::string pack(const std::string& text, int window_bits) {
    z_stream z{};
    EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
    std::string out(deflateBound(&z, uLong(text.size())), '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    z.avail_in = uInt(text.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = uInt(out.size());
    EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
    out.resize(out.size() - z.avail_out);
    deflateEnd(&z);
    return out;
}
std::string gzip(const std::string& t) {
    return pack(t, 16 + MAX_WBITS);
}
std::string zlib(const std::string& t) {
    return pack(t, MAX_WBITS);
}

TEST(BodyCoding, NamesAreParsedAsHttpSaysAndAnythingElseIsUnknown) {
    EXPECT_EQ(parse_body_coding("gzip"), BodyCoding::gzip);
    EXPECT_EQ(parse_body_coding(" X-GZIP "), BodyCoding::gzip);
    EXPECT_EQ(parse_body_coding("Deflate"), BodyCoding::deflate);
    EXPECT_EQ(parse_body_coding("identity"), BodyCoding::identity);
    for (const char* v : {"br", "zstd", "compress", "gzip, gzip", "gzip;q=1", ""})
        EXPECT_FALSE(parse_body_coding(v).has_value()) << v;
}

// The limit is on the inflated size: exactly `limit` bytes inflate, `limit + 1` do not — whatever
// the packed size (100000 equal bytes pack into a few hundred).
TEST(BodyCoding, TheLimitIsExactOnTheInflatedSize) {
    const std::string text(100000, 'x');
    for (const BodyCoding c : {BodyCoding::gzip, BodyCoding::deflate}) {
        const std::string packed = c == BodyCoding::gzip ? gzip(text) : zlib(text);
        ASSERT_LT(packed.size(), 1000u);
        const InflatedBody ok = inflate_body(packed, c, text.size());
        ASSERT_EQ(ok.status, InflatedBody::Status::ok) << ok.detail;
        EXPECT_EQ(ok.body, text);
        const InflatedBody over = inflate_body(packed, c, text.size() - 1);
        EXPECT_EQ(over.status, InflatedBody::Status::too_large);
        EXPECT_TRUE(over.body.empty());
    }
    EXPECT_EQ(inflate_body(text, BodyCoding::identity, text.size()).status,
              InflatedBody::Status::ok);
    EXPECT_EQ(inflate_body(text, BodyCoding::identity, text.size() - 1).status,
              InflatedBody::Status::too_large);
}

TEST(BodyCoding, SeveralGzipMembersConcatenateButDeflateHasOne) {
    const InflatedBody two = inflate_body(gzip("{\"a\":") + gzip("1}"), BodyCoding::gzip, 100);
    ASSERT_EQ(two.status, InflatedBody::Status::ok) << two.detail;
    EXPECT_EQ(two.body, "{\"a\":1}");
    EXPECT_EQ(inflate_body(zlib("a") + zlib("b"), BodyCoding::deflate, 100).status,
              InflatedBody::Status::corrupt);
}

TEST(BodyCoding, CorruptTruncatedOrMislabelledDataIsCorrupt) {
    const std::string packed = gzip(std::string(5000, 'y') + "end");
    const std::string cases[] = {
        packed.substr(0, packed.size() - 4),  // the trailer cut: truncated
        packed + "tail",                      // bytes after the last member
        zlib("hello"),                        // zlib data labelled gzip
        "",                                   // nothing at all
    };
    for (const std::string& bad : cases) {
        const InflatedBody r = inflate_body(bad, BodyCoding::gzip, 1 << 20);
        EXPECT_EQ(r.status, InflatedBody::Status::corrupt) << bad.size();
        EXPECT_FALSE(r.detail.empty());
    }
    EXPECT_EQ(inflate_body(gzip("hello"), BodyCoding::deflate, 100).status,
              InflatedBody::Status::corrupt);
}

}  // namespace
}  // namespace fluoro::app
