// `fluoro run --backend`: cuda runs where a GPU is usable and is refused with the reason where
// not (CI: the CUDA backend is built, there is no GPU), an unknown backend is refused naming the
// valid ones, and `fluoro info --system` reports what the CUDA backend can do here.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "app/cli/fluoro_cli.h"
#include "session/backend_factory.h"
#include "test_models.h"

namespace fluoro {
namespace {

using test::fluoro_binary;

test::CliResult fluoro(const std::string& args) {
    return test::run_fluoro(args);
}

bool gpu_usable() {
    const std::string s = app::cuda_status();
    return s.rfind("unavailable", 0) != 0 && s.rfind("not built", 0) != 0;
}

TEST(CmdBackend, CudaRunsOnAGpuAndIsRefusedWithTheReasonElsewhere) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    if (!std::filesystem::exists(fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    std::string args = "run '";
    args += path.string();
    args += "' 'Say hi.' -n 4 --temp 0 --backend cuda";
    const test::CliResult r = fluoro(args);
    if (gpu_usable()) {
        EXPECT_EQ(r.rc, 0) << r.out;
        EXPECT_NE(r.out.find("decode 4 tok"), std::string::npos) << r.out;
    } else {
        EXPECT_NE(r.rc, 0) << r.out;
        const bool says_why = r.out.find("no usable GPU") != std::string::npos ||
                              r.out.find("built without the CUDA backend") != std::string::npos;
        EXPECT_TRUE(says_why) << r.out;
    }
}

TEST(CmdBackend, UnknownBackendIsRefusedNamingTheValidOnes) {
    if (!std::filesystem::exists(fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const test::CliResult r = fluoro("run /nonexistent.gguf hi --backend tpu");
    EXPECT_NE(r.rc, 0);
    EXPECT_NE(r.out.find("--backend must be cpu or cuda"), std::string::npos) << r.out;
}

TEST(CmdBackend, InfoSystemReportsTheCudaBackend) {
    if (!std::filesystem::exists(fluoro_binary())) GTEST_SKIP() << "no fluoro binary";
    const test::CliResult r = fluoro("info --system");
    EXPECT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("CUDA backend"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(app::cuda_status()), std::string::npos) << r.out;
}

}  // namespace
}  // namespace fluoro
