// stats_line: the CLI's one-line summary, with the reasoning tokens only when there were some.
#include "session/stats_line.h"

#include <gtest/gtest.h>

namespace fluoro::app {
namespace {

TEST(StatsLine, ReasoningTokensOnlyWhenTheModelReasoned) {
    GenerateResult r;
    r.tokens.assign(20, 0);
    r.stop = StopReason::EndOfGeneration;
    const std::string plain = stats_line(r);
    EXPECT_NE(plain.find("decode 20 tok"), std::string::npos) << plain;
    EXPECT_EQ(plain.find("reasoning"), std::string::npos) << plain;
    const std::string reasoned = stats_line(r, 12);
    EXPECT_NE(reasoned.find(" | reasoning 12 tok"), std::string::npos) << reasoned;
}

}  // namespace
}  // namespace fluoro::app
