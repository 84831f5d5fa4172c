// The bounded stream: tokens and steps are never dropped however far behind the consumer is;
// snapshots are decimated, and every drop is counted and reported before the next event.
#include "telemetry/event_stream.h"

#include <gtest/gtest.h>

#include <thread>

namespace fluoro {
namespace {

std::shared_ptr<const KvSnapshot> kv_snapshot(int64_t step) {
    auto s = std::make_shared<KvSnapshot>();
    s->step = step;
    s->blocks.resize(256);
    return s;
}

TEST(EventStream, TokensAndStepsAreNeverDropped) {
    EventStream stream(4);
    for (int64_t i = 0; i < 20000; ++i) {
        stream.push(TokenEvent{1, i, int32_t(i % 100), "x", 0, {}, i});
        stream.push(StepEvent{1, i, StepPhase::Decode, 1, i, i + 1, {}});
    }
    const auto events = stream.drain();
    ASSERT_EQ(events.size(), 40000u);
    for (int64_t i = 0; i < 20000; ++i) {
        const auto& t = std::get<TokenEvent>(events[size_t(2 * i)]);
        EXPECT_EQ(t.index, i);
        EXPECT_EQ(std::get<StepEvent>(events[size_t(2 * i + 1)]).index, i);
    }
}

TEST(EventStream, SnapshotsAreDecimatedAndDropsReported) {
    EventStream stream(8);
    for (int64_t i = 0; i < 100; ++i) {
        stream.push(kv_snapshot(i));
        stream.push(TokenEvent{1, i, 0, "", 0, {}, i});
    }
    const EventStreamStats st = stream.stats();
    EXPECT_LE(st.pending_snapshots, 8u);
    EXPECT_EQ(st.dropped_kv, 100 - int64_t(st.pending_snapshots));
    const auto events = stream.drain();
    ASSERT_FALSE(events.empty());
    const auto* report = std::get_if<DropReport>(&events.front());
    ASSERT_NE(report, nullptr);
    EXPECT_EQ(report->kv, st.dropped_kv);
    EXPECT_EQ(report->total_kv, st.dropped_kv);
    EXPECT_EQ(report->attention, 0);
    int64_t tokens = 0, snapshots = 0, last_step = -1;
    for (const auto& e : events) {
        if (std::holds_alternative<TokenEvent>(e)) ++tokens;
        if (const auto* s = std::get_if<std::shared_ptr<const KvSnapshot>>(&e)) {
            ++snapshots;
            EXPECT_GT((*s)->step, last_step);  // kept ones stay in order
            last_step = (*s)->step;
        }
    }
    EXPECT_EQ(tokens, 100);
    EXPECT_EQ(snapshots, int64_t(st.pending_snapshots));
    // Decimation keeps some snapshots past the first half of the budget, not just a prefix.
    EXPECT_GT(snapshots, 4);
    // Once drained, snapshots flow again and nothing more is reported.
    stream.push(kv_snapshot(1000));
    const auto after = stream.drain();
    ASSERT_EQ(after.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<std::shared_ptr<const KvSnapshot>>(after[0]));
}

TEST(EventStream, PopWaitsForAProducerAndCloseWakesIt) {
    EventStream stream;
    EXPECT_FALSE(stream.pop(std::chrono::milliseconds(1)).has_value());
    std::thread producer([&] { stream.push(ModelUnloaded{}); });
    std::optional<Event> e;
    while (!e) e = stream.pop(std::chrono::milliseconds(100));
    producer.join();
    EXPECT_TRUE(std::holds_alternative<ModelUnloaded>(*e));
    std::thread closer([&] { stream.close(); });
    EXPECT_FALSE(stream.pop(std::chrono::hours(1)).has_value());  // returns once closed
    closer.join();
    stream.push(ModelUnloaded{});  // ignored after close
    EXPECT_TRUE(stream.drain().empty());
}

TEST(EventStream, EventRunNamesTheRun) {
    EXPECT_EQ(event_run(Event(TokenEvent{7, 0, 0, "", 0, {}, 0})), 7u);
    auto kv = std::make_shared<KvSnapshot>();
    kv->run = 9;
    EXPECT_EQ(event_run(Event(std::shared_ptr<const KvSnapshot>(kv))), 9u);
    EXPECT_EQ(event_run(Event(ModelUnloaded{})), 0u);
}

}  // namespace
}  // namespace fluoro
