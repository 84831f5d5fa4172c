// The fidelity reference reader (app/measure/fidelity_file.h): a well-formed file read back
// field by field, and damaged or foreign files refused with an Error naming the file and what
// is wrong — never read past what the file holds.
#include "measure/fidelity_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "test_temp.h"

namespace fluoro::app {
namespace {

nlohmann::json good_header() {
    return {{"format", 1},
            {"generator", "test"},
            {"model_file", "m.gguf"},
            {"model_sha256", "ab"},
            {"arch", "llama"},
            {"n_ctx", 6},
            {"first_scored", 3},
            {"n_embd", 2},
            {"rows", 4},
            {"chunks", {{1, 2, 3, 4, 5, 6}, {7, 8, 9, 10, 11, 12}}},
            {"check", {{"ids", {4, 1}}, {"logits", {2.5, -1.0}}, {"logsumexp", 3.25}}},
            {"llama.cpp",
             {{"kld_mean", 0.01},
              {"kld_p99", 0.1},
              {"kld_max", 0.5},
              {"top1", 0.9},
              {"ppl", 11.0},
              {"version", "0.3.36"},
              {"settings", "n_ctx 6"}}}};
}

std::string file_bytes(const std::string& header, const std::vector<double>& hidden,
                       const char* magic = "FLFIDEL1") {
    std::string out(magic, 8);
    const uint32_t n = uint32_t(header.size());
    out.append(reinterpret_cast<const char*>(&n), 4);
    out += header;
    out.append(reinterpret_cast<const char*>(hidden.data()), hidden.size() * sizeof(double));
    return out;
}

std::filesystem::path write(const std::string& bytes) {
    static int n = 0;
    const auto path = test::unique_temp_path("fidelity-" + std::to_string(n++) + ".fref");
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
}

const std::vector<double> kHidden{0.5, 1.5, -2.0, 3.0, 0.25, 0.0, 1e-3, -7.0};

TEST(FidelityFile, ReadsEveryField) {
    const FidelityFile f = read_fidelity_file(write(file_bytes(good_header().dump(), kHidden)));
    EXPECT_EQ(f.ref.n_ctx, 6);
    EXPECT_EQ(f.ref.first_scored, 3);
    EXPECT_EQ(f.ref.scored_per_window(), 2);
    EXPECT_EQ(f.ref.n_embd, 2);
    ASSERT_EQ(f.ref.windows.size(), 2u);
    EXPECT_EQ(f.ref.windows[1][5], 12);
    EXPECT_EQ(f.ref.hidden, kHidden);
    EXPECT_EQ(f.ref.check_ids, (std::vector<int32_t>{4, 1}));
    EXPECT_EQ(f.ref.check_logits, (std::vector<double>{2.5, -1.0}));
    EXPECT_EQ(f.ref.check_logsumexp, 3.25);
    EXPECT_EQ(f.model_sha256, "ab");
    ASSERT_TRUE(f.llama_cpp.has_value());
    EXPECT_EQ(f.llama_cpp->kld_p99, 0.1);
    EXPECT_EQ(f.llama_cpp_version, "0.3.36");
    FidelityStats ours;
    ours.tokens = 4;
    ours.kld_mean = 0.002;
    const nlohmann::json j = fidelity_json(ours, f);
    EXPECT_EQ(j["tokens"], 4);
    EXPECT_EQ(j["fluoro"]["kld_mean"], 0.002);
    EXPECT_EQ(j["llama.cpp"]["top1"], 0.9);

    nlohmann::json no_peer = good_header();
    no_peer.erase("llama.cpp");
    const FidelityFile g = read_fidelity_file(write(file_bytes(no_peer.dump(), kHidden)));
    EXPECT_FALSE(g.llama_cpp.has_value());
    EXPECT_FALSE(fidelity_json(ours, g).contains("llama.cpp"));
}

void expect_refused(const std::string& bytes, const std::string& needle) {
    const auto path = write(bytes);
    try {
        read_fidelity_file(path);
        ADD_FAILURE() << "accepted; expected an error naming '" << needle << "'";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(path.string()), std::string::npos) << what;
        EXPECT_NE(what.find(needle), std::string::npos) << what;
    }
}

nlohmann::json with(const char* key, nlohmann::json value) {
    nlohmann::json h = good_header();
    h[key] = std::move(value);
    return h;
}

TEST(FidelityFile, DamagedOrForeignFilesAreRefusedNamingWhatIsWrong) {
    const std::string good = file_bytes(good_header().dump(), kHidden);
    expect_refused(file_bytes(good_header().dump(), kHidden, "GGUF\3\0\0\0"), "FLFIDEL1");
    expect_refused(good.substr(0, 10), "FLFIDEL1");
    expect_refused(good.substr(0, 40), "header claims");
    std::string huge = good;
    const uint32_t big = 0xffffffffu;
    std::memcpy(huge.data() + 8, &big, 4);
    expect_refused(huge, "header claims");
    expect_refused(file_bytes("{\"format\": 1,", kHidden), "not JSON");
    expect_refused(file_bytes("[1, 2]", kHidden), "not a JSON object");
    expect_refused(file_bytes(with("format", 2).dump(), kHidden), "format 2");
    expect_refused(file_bytes(with("n_ctx", -6).dump(), kHidden), "'n_ctx' must be");
    expect_refused(file_bytes(with("n_embd", "2").dump(), kHidden), "'n_embd' must be");
    expect_refused(file_bytes(with("first_scored", 5).dump(), kHidden), "scores from position 5");
    expect_refused(file_bytes(with("rows", 5).dump(), kHidden), "5 rows for 2 windows");
    expect_refused(
        file_bytes(with("chunks", nlohmann::json::array({nlohmann::json::array({1, 2, 3})})).dump(),
                   kHidden),
        "window 0 is not 6");
    expect_refused(file_bytes(with("chunks", nlohmann::json::array()).dump(), kHidden),
                   "non-empty array");
    expect_refused(
        file_bytes(
            with("chunks", nlohmann::json::array({nlohmann::json::array({1, 2, 3, -4, 5, 6}),
                                                  nlohmann::json::array({7, 8, 9, 10, 11, 12})}))
                .dump(),
            kHidden),
        "not one: -4");
    expect_refused(file_bytes(good_header().dump(), {0.5, 1.5}), "bytes of hidden values");
    std::vector<double> more = kHidden;
    more.push_back(1.0);
    expect_refused(file_bytes(good_header().dump(), more), "bytes of hidden values");
    std::vector<double> nan = kHidden;
    nan[5] = std::numeric_limits<double>::quiet_NaN();
    expect_refused(file_bytes(good_header().dump(), nan), "hidden value 5");
    nlohmann::json h = good_header();
    h.erase("check");
    expect_refused(file_bytes(h.dump(), kHidden), "no 'check'");
    h = good_header();
    h["check"]["logits"] = {2.5};
    expect_refused(file_bytes(h.dump(), kHidden), "as many 'ids' as 'logits'");
    h = good_header();
    h["check"]["ids"] = {4, 5000000000};
    expect_refused(file_bytes(h.dump(), kHidden), "'check' entry 1 is not a token id");
    h = good_header();
    h["llama.cpp"]["kld_mean"] = "small";
    expect_refused(file_bytes(h.dump(), kHidden), "'kld_mean' must be");
    expect_refused(std::string(), "FLFIDEL1");
}

TEST(FidelityFile, AMissingFileIsNamed) {
    EXPECT_THROW(read_fidelity_file(test::unique_temp_path("absent.fref")), Error);
}

}  // namespace
}  // namespace fluoro::app
