// The scheduler record the window's Scheduler view draws: a step's parts, times and load as the
// batch engine reported them; take() hands each step over once, oldest first; a GUI that does
// not take loses the oldest beyond the capacity, never blocks the engine.
#include "server/batch_schedule.h"

#include <gtest/gtest.h>

namespace fluoro::app {
namespace {

BatchStep step(int64_t index, std::chrono::steady_clock::time_point at) {
    BatchStep s;
    s.index = index;
    s.started = at;
    s.ms = 2.5;
    s.parts = {{7, 0, 32, true, false, 32}, {9, 1, 1, false, false, 40}};
    return s;
}

TEST(BatchSchedule, StepsAreTakenOnceOldestFirst) {
    BatchSchedule sched(2);
    EXPECT_EQ(sched.n_slots(), 2);
    const auto now = std::chrono::steady_clock::now();
    BatchLoad load;
    load.running = 2;
    load.waiting = 3;
    load.kv_used_bytes = 100;
    load.kv_bytes = 1000;
    sched.step(step(0, now), load);
    sched.step(step(1, now + std::chrono::milliseconds(3)), load);
    const std::vector<ScheduleStep> got = sched.take();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].index, 0);
    EXPECT_DOUBLE_EQ(got[1].end_ms - got[1].start_ms, 2.5);
    EXPECT_NEAR(got[1].start_ms - got[0].start_ms, 3.0, 1e-6);
    ASSERT_EQ(got[0].parts.size(), 2u);
    EXPECT_EQ(got[0].parts[0].request, 7u);
    EXPECT_EQ(got[0].parts[0].slot, 0);
    EXPECT_EQ(got[0].parts[0].tokens, 32);
    EXPECT_TRUE(got[0].parts[0].prefill);
    EXPECT_FALSE(got[0].parts[1].prefill);
    EXPECT_EQ(got[0].parts[1].kv_tokens, 40);
    EXPECT_EQ(got[0].waiting, 3);
    EXPECT_EQ(got[0].kv_bytes, 1000);
    EXPECT_TRUE(sched.take().empty());
    EXPECT_EQ(sched.steps_recorded(), 2);
}

TEST(BatchSchedule, UntakenStepsBeyondTheCapacityDropTheOldest) {
    BatchSchedule sched(1, 3);
    const auto now = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < 5; ++i) sched.step(step(i, now), BatchLoad{});
    const std::vector<ScheduleStep> got = sched.take();
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got.front().index, 2);
    EXPECT_EQ(got.back().index, 4);
    EXPECT_EQ(sched.steps_recorded(), 5);
}

}  // namespace
}  // namespace fluoro::app
