// `fluoro convert IN OUT --kv-heads N`: the merge (model/kv_head_merge.h) from the command line,
// and its argument checks.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "app/cli/fluoro_cli.h"
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
    EXPECT_NE(ok.out.find("2 KV heads merged to 1 by their mean (4 tensors); KV cache per token "
                          "0.5x"),
              std::string::npos)
        << ok.out;
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

}  // namespace
}  // namespace fluoro
