// `fluoro convert IN OUT --kv-heads N`: the merge (model/kv_head_merge.h) from the command line,
// and its argument checks; `--mla-rank R --rope-pairs P`: the MLA conversion
// (model/mla_convert.h), whose output runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "app/cli/fluoro_cli.h"
#include "gguf/gguf_file.h"
#include "gguf/test_model.h"
#include "test_models.h"
#include "test_temp.h"

namespace fluoro {
namespace {

TEST(CmdConvert, MergesKvHeadsAndChecksTheTarget) {
    if (!std::filesystem::exists(test::fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const std::string in = test::quoted((test::fixtures_dir() / "arch_llama_linear.gguf").string());
    const auto out = test::unique_temp_path("convert_mqa.gguf");
    const test::CliResult ok =
        test::run_fluoro("convert " + in + test::quoted(out.string()) + " --kv-heads 1");
    ASSERT_EQ(ok.rc, 0) << ok.out;
    EXPECT_NE(ok.out.find("2 KV heads merged to 1 (their mean; 4 tensors); KV cache per token "
                          "0.5x"),
              std::string::npos)
        << ok.out;
    // Aligned, fitted to a text: it says so, and what the merged heads miss against the mean.
    const auto text = test::unique_temp_path("convert_text.txt");
    {
        std::ofstream t(text);
        for (int i = 0; i < 60; ++i) t << "the cat sat on the mat and the dog sat on the log. ";
    }
    const test::CliResult aligned =
        test::run_fluoro("convert " + in + test::quoted(out.string()) +
                         " --kv-heads 1 --merge aligned --calibrate " +
                         test::quoted(text.string()) + " --calibrate-tokens 512 -t 1");
    ASSERT_EQ(aligned.rc, 0) << aligned.out;
    EXPECT_NE(aligned.out.find("calibrated on 512 tokens of"), std::string::npos) << aligned.out;
    EXPECT_NE(aligned.out.find("(aligned, then averaged; 4 tensors)"), std::string::npos)
        << aligned.out;
    EXPECT_NE(aligned.out.find("squared values on the calibration text (the mean: "),
              std::string::npos)
        << aligned.out;
    const test::CliResult mean_fit = test::run_fluoro("convert " + in + test::quoted(out.string()) +
                                                      " --kv-heads 1 --calibrate bible");
    EXPECT_NE(mean_fit.rc, 0);
    EXPECT_NE(mean_fit.out.find("use --merge aligned"), std::string::npos) << mean_fit.out;
    const test::CliResult bogus = test::run_fluoro("convert " + in + test::quoted(out.string()) +
                                                   " --kv-heads 1 --merge median");
    EXPECT_NE(bogus.rc, 0);
    EXPECT_NE(bogus.out.find("expected mean or aligned"), std::string::npos) << bogus.out;
    std::filesystem::remove(text);
    const test::CliResult runs =
        test::run_fluoro("run --raw " + test::quoted(out.string()) + " hi -n 2 -t 1 --temp 0 -q");
    EXPECT_EQ(runs.rc, 0) << runs.out;
    for (const char* bad : {" --kv-heads 2", " --kv-heads 3", " --kv-heads 0"}) {
        const test::CliResult r =
            test::run_fluoro("convert " + in + test::quoted(out.string()) + bad);
        EXPECT_NE(r.rc, 0) << bad;
        EXPECT_NE(r.out.find("the target must be fewer and divide them"), std::string::npos)
            << r.out;
    }
    std::filesystem::remove(out);
}

// A random llama of 2 layers, 4 query heads over 2 KV heads of 16 dims (8 rotary pairs each).
TEST(CmdConvert, WritesLatentAttentionThatRuns) {
    if (!std::filesystem::exists(test::fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const auto src = test::unique_temp_path("convert_mla_src.gguf");
    gguf::TestModelSpec spec;
    spec.n_embd = 64;
    spec.n_head = 4;
    spec.n_head_kv = 2;
    gguf::write_test_model(src, spec);
    const std::string in = test::quoted(src.string());
    const auto out = test::unique_temp_path("convert_mla.gguf");
    const test::CliResult ok = test::run_fluoro("convert " + in + test::quoted(out.string()) +
                                                " --mla-rank 24 --rope-pairs 2");
    ASSERT_EQ(ok.rc, 0) << ok.out;
    // 2 heads x 2 pairs x 2 = 8 rotary dims, 16 - 4 = 12 position-free key dims per head; the
    // cache held 2 x 2 x 16 = 64 values per token and layer, the absorbed path's 8 + 24 (the
    // RoPE key and the latent, which is the values too).
    EXPECT_NE(ok.out.find("deepseek2 (MLA), 2 layers: latent rank 24, 8 rotary dims (2 pairs per "
                          "KV head, the fastest), 12 position-free key dims"),
              std::string::npos)
        << ok.out;
    EXPECT_NE(ok.out.find("64 -> 32 values (0.5x)"), std::string::npos) << ok.out;
    const test::CliResult runs =
        test::run_fluoro("run --raw " + test::quoted(out.string()) + " hi -n 2 -t 1 --temp 0 -q");
    EXPECT_EQ(runs.rc, 0) << runs.out;
    const test::CliResult info = test::run_fluoro("info " + test::quoted(out.string()));
    EXPECT_NE(info.out.find("MLA"), std::string::npos) << info.out;
    // --type q8_0 writes the projections whose rows are whole blocks as Q8_0; the file runs.
    const test::CliResult q8 = test::run_fluoro("convert " + in + test::quoted(out.string()) +
                                                " --mla-rank 24 --rope-pairs 2 --type q8_0");
    ASSERT_EQ(q8.rc, 0) << q8.out;
    EXPECT_EQ(gguf::GgufFile::open(out).find_tensor("blk.0.attn_q.weight")->type, GgmlType::Q8_0);
    EXPECT_EQ(
        test::run_fluoro("run --raw " + test::quoted(out.string()) + " hi -n 2 -t 1 --temp 0 -q")
            .rc,
        0);
    const test::CliResult q4 = test::run_fluoro("convert " + in + test::quoted(out.string()) +
                                                " --mla-rank 24 --type q4_0");
    EXPECT_NE(q4.rc, 0);
    EXPECT_NE(q4.out.find("expected f32 or q8_0"), std::string::npos) << q4.out;
    const test::CliResult both = test::run_fluoro("convert " + in + test::quoted(out.string()) +
                                                  " --mla-rank 24 --kv-heads 1");
    EXPECT_NE(both.rc, 0) << both.out;
    const test::CliResult big = test::run_fluoro("convert " + in + test::quoted(out.string()) +
                                                 " --mla-rank 100 --rope-pairs 2");
    EXPECT_NE(big.rc, 0);
    EXPECT_NE(big.out.find("can have 1 to 56 dims"), std::string::npos) << big.out;
    std::filesystem::remove(out);
}

}  // namespace
}  // namespace fluoro
