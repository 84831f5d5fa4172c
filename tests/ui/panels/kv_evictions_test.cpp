// The KV policy's evictions in the panels: the slot → position mapping (an eviction compacts the
// cache, later tokens follow at the next slots; a run's attention of step S saw step S's
// evictions; the next run of the conversation starts from the cut layout), the KV panel's counts,
// strip and text, and the attention heatmap whose columns become conversation positions with the
// evicted ones marked.
#include <QTest>

#include "panels/attention_heatmap.h"
#include "panels/attention_panel.h"
#include "panels/kv_eviction_strip.h"
#include "panels/kv_panel.h"
#include "panels/kv_slot_map.h"
#include "synthetic_events.h"

using namespace fluoro;
using namespace fluoro::ui;

namespace {

// Cached 0..9, kept sinks 0, 1 and recent 6..9; evicted 2..5.
KvEviction eviction(uint64_t run, int64_t step, std::vector<int64_t> evicted,
                    std::vector<int64_t> kept, std::vector<uint8_t> reasons) {
    KvEviction e;
    e.run = run;
    e.step = step;
    e.policy = "streaming";
    e.budget = 8;
    e.length_before = int64_t(evicted.size() + kept.size());
    e.evicted = std::move(evicted);
    e.kept = std::move(kept);
    e.reasons = std::move(reasons);
    e.ms = 0.5;
    return e;
}

KvEviction first_eviction(uint64_t run = 1) {
    return eviction(run, 3, {2, 3, 4, 5}, {0, 1, 6, 7, 8, 9}, {0, 0, 1, 1, 1, 1});
}

std::shared_ptr<const AttentionSnapshot> row(uint64_t run, int64_t step, int64_t query_slot,
                                             std::vector<float> weights) {
    auto s = std::make_shared<AttentionSnapshot>();
    s->run = run;
    s->step = step;
    s->first_row = query_slot;
    s->n_rows = 1;
    s->n_cols = int64_t(weights.size());
    s->weights = std::move(weights);
    return s;
}

}  // namespace

class KvEvictionsTest : public QObject {
    Q_OBJECT
  private slots:
    void slots_are_positions_before_any_eviction();
    void an_eviction_then_appends_map_slots_to_positions();
    void a_second_eviction_replaces_the_first();
    void a_steps_attention_saw_that_steps_eviction();
    void the_next_run_starts_from_the_cut_layout();
    void kv_panel_counts_the_latest_eviction();
    void strip_colors_positions_by_their_fate();
    void heatmap_columns_are_positions_with_evicted_ones_marked();
};

void KvEvictionsTest::slots_are_positions_before_any_eviction() {
    KvSlotLayout l;
    QVERIFY(l.identity());
    QCOMPARE(l.position(0), int64_t(0));
    QCOMPARE(l.position(41), int64_t(41));
    QCOMPARE(l.slot_of(41), std::optional<int64_t>(41));
    QVERIFY(!l.evicted(3));
    QCOMPARE(l.evicted_count(), int64_t(0));
}

void KvEvictionsTest::an_eviction_then_appends_map_slots_to_positions() {
    KvSlotLayout l;
    l.apply(first_eviction());
    // Slot i holds kept[i]...
    const int64_t expect[] = {0, 1, 6, 7, 8, 9};
    for (int64_t slot = 0; slot < 6; ++slot) QCOMPARE(l.position(slot), expect[slot]);
    // ... and tokens appended after it follow at the next slots.
    QCOMPARE(l.position(6), int64_t(10));
    QCOMPARE(l.position(8), int64_t(12));
    QCOMPARE(l.slot_of(12), std::optional<int64_t>(8));
    QCOMPARE(l.slot_of(7), std::optional<int64_t>(3));
    QCOMPARE(l.slot_of(4), std::optional<int64_t>());
    QVERIFY(l.evicted(2) && l.evicted(5) && !l.evicted(6) && !l.evicted(1));
    QCOMPARE(l.reason(0), std::optional(KvKeepReason::Sink));
    QCOMPARE(l.reason(7), std::optional(KvKeepReason::Recent));
    QCOMPARE(l.reason(3), std::optional(KvKeepReason::Evicted));
    QCOMPARE(l.reason(10), std::optional<KvKeepReason>());  // appended since: not judged
    QCOMPARE(l.evicted_count(), int64_t(4));
}

void KvEvictionsTest::a_second_eviction_replaces_the_first() {
    KvSlotLayout l;
    l.apply(first_eviction());
    // Cached now: 0, 1, 6..9, 10, 11 (8 slots); the policy keeps the sinks, a heavy hitter at 7 and
    // 10, 11.
    l.apply(eviction(1, 5, {6, 8, 9}, {0, 1, 7, 10, 11}, {0, 0, 2, 1, 1}));
    QCOMPARE(l.position(2), int64_t(7));
    QCOMPARE(l.position(3), int64_t(10));
    QCOMPARE(l.position(5), int64_t(12));  // the next append
    QCOMPARE(l.reason(7), std::optional(KvKeepReason::Heavy));
    QVERIFY(l.evicted(3));  // gone since the first eviction
    QVERIFY(l.evicted(9));
    QCOMPARE(l.evicted_count(), int64_t(7));
}

void KvEvictionsTest::a_steps_attention_saw_that_steps_eviction() {
    KvSlotHistory h;
    h.begin_run(1);
    h.add(first_eviction());  // step 3
    QVERIFY(h.at_step(2).identity());
    QCOMPARE(h.at_step(2).position(6), int64_t(6));
    QCOMPARE(h.at_step(3).position(6), int64_t(10));  // the policy made room before the append
    QCOMPARE(h.at_step(9).position(2), int64_t(6));
    QCOMPARE(h.latest().position(2), int64_t(6));
}

void KvEvictionsTest::the_next_run_starts_from_the_cut_layout() {
    KvSlotHistory h;
    h.begin_run(7);
    h.add(first_eviction());
    // Same conversation: the cache still holds 0, 1, 6.. and the new prompt reused 12 positions.
    h.begin_run(7);
    QVERIFY(h.evictions().empty());
    h.set_reuse(12);
    QCOMPARE(h.at_step(0).position(2), int64_t(6));
    QCOMPARE(h.at_step(0).position(8), int64_t(12));  // the new prompt from position 12 on
    QVERIFY(h.latest().evicted(4));
    // Cut below the eviction: nothing evicted there, slots are positions again.
    h.set_reuse(2);
    QVERIFY(h.latest().identity());
    // Another conversation starts from the identity.
    h.set_reuse(12);
    h.begin_run(8);
    QVERIFY(h.latest().identity());
    QVERIFY(!h.any());
}

void KvEvictionsTest::kv_panel_counts_the_latest_eviction() {
    KvPanel panel;
    std::vector<Event> events = test::synthetic_run(1);  // has KV snapshots (bytes per token)
    events.push_back(first_eviction());
    events.push_back(eviction(1, 5, {6, 8, 9}, {0, 1, 7, 10, 11}, {0, 0, 2, 1, 1}));
    panel.consume(events);
    const KvState& s = panel.state();
    QCOMPARE(s.evictions().size(), size_t(2));
    const KvEvictionCounts n = eviction_counts(*s.last_eviction());
    QCOMPARE(n.sinks, int64_t(2));
    QCOMPARE(n.heavy, int64_t(1));
    QCOMPARE(n.recent, int64_t(2));
    QCOMPARE(n.evicted, int64_t(3));
    QCOMPARE(n.kept(), int64_t(5));
    QCOMPARE(s.evicted_positions(), int64_t(7));
    QVERIFY(s.snapshot());
    QCOMPARE(s.bytes_saved(), 7 * s.snapshot()->bytes_per_token);
    const QString text = panel.eviction_text();
    QVERIFY2(text.contains(QStringLiteral("streaming")), qPrintable(text));
    QVERIFY(text.contains(QStringLiteral("budget 8 tokens")));
    QVERIFY(text.contains(QStringLiteral("2 evictions this run")));
    QVERIFY(text.contains(QStringLiteral("kept 5 (2 sinks, 1 heavy, 2 recent), evicted 3")));
    QVERIFY(text.contains(QStringLiteral("saved")));
    // A new run of another conversation starts clean.
    RunStarted next = test::run_started(2, {"a", "b"});
    next.conversation = 2;
    panel.consume({next});
    QVERIFY(panel.state().evictions().empty());
    QVERIFY(panel.eviction_text().isEmpty());
}

void KvEvictionsTest::strip_colors_positions_by_their_fate() {
    KvSlotLayout l;
    const KvEviction e = first_eviction();
    l.apply(e);
    QCOMPARE(kv_cell(l, &e, 0), KvCell::Sink);
    QCOMPARE(kv_cell(l, &e, 3), KvCell::EvictedNow);
    QCOMPARE(kv_cell(l, &e, 8), KvCell::Recent);
    QCOMPARE(kv_cell(l, &e, 10), KvCell::Pending);
    const KvEviction later = eviction(1, 5, {6, 8, 9}, {0, 1, 7, 10, 11}, {0, 0, 2, 1, 1});
    l.apply(later);
    QCOMPARE(kv_cell(l, &later, 3), KvCell::EvictedBefore);
    QCOMPARE(kv_cell(l, &later, 8), KvCell::EvictedNow);
    QCOMPARE(kv_cell(l, &later, 7), KvCell::Heavy);

    KvPanel panel;
    panel.resize(600, 500);
    panel.show();
    panel.consume({test::run_started(1, std::vector<std::string>(10, "x")), first_eviction()});
    KvEvictionStrip* strip = panel.eviction_strip();
    QVERIFY(strip->isVisible());
    QCOMPARE(strip->visible_rows(), 1);
    // Hovering the "now" bar at its left end names position 0 as a sink.
    QString tip;
    for (int y = 0; y < strip->height() && tip.isEmpty(); ++y)
        tip = strip->tooltip_at(QPoint(80, y));
    QVERIFY2(tip.startsWith(QStringLiteral("position 0 · kept: sink")), qPrintable(tip));
}

void KvEvictionsTest::heatmap_columns_are_positions_with_evicted_ones_marked() {
    AttentionPanel panel;
    panel.resize(700, 500);
    std::vector<std::string> prompt;
    for (int i = 0; i < 10; ++i) {
        std::string piece = "p";  // appended, not "p" + ...: GCC 12 warns falsely (-Wrestrict)
        piece += std::to_string(i);
        prompt.push_back(piece);
    }
    // Step 2 (before any eviction): query slot 9 over keys 0..9.
    std::vector<Event> events{test::run_started(1, prompt),
                              row(1, 2, 9, std::vector<float>(10, 0.1f))};
    // Step 3: the policy evicted 2..5 before the append; query slot 6 (position 10) over 7 slots.
    events.push_back(row(1, 3, 6, {0.4f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f}));
    events.push_back(TokenEvent{1, 0, 5, "gen0", -0.1f, {}, 10});  // position 10
    events.push_back(first_eviction());  // arrives after its step's attention, as live
    panel.consume(events);
    const AttentionState& s = panel.state();
    const auto shown = s.snapshot(0, 0);
    QVERIFY(shown);
    // Rows are query positions 9 and 10, columns positions 0..10.
    QCOMPARE(shown->first_row, int64_t(9));
    QCOMPARE(shown->n_rows, int64_t(2));
    QCOMPARE(shown->key_begin, int64_t(0));
    QCOMPARE(shown->n_cols, int64_t(11));
    const auto w = [&](int64_t r, int64_t c) {
        return shown->weights[size_t(r * shown->n_cols + c)];
    };
    QCOMPARE(w(0, 3), 0.1f);   // before the eviction, position 3 was attended to
    QCOMPARE(w(1, 0), 0.4f);   // slot 0 = position 0 (a sink)
    QCOMPARE(w(1, 3), 0.0f);   // evicted: nobody attends to it any more
    QCOMPARE(w(1, 6), 0.1f);   // slot 2 = position 6
    QCOMPARE(w(1, 10), 0.1f);  // slot 6 = position 10 (the query itself)
    QCOMPARE(s.key_mark(0), std::optional(KvBlockState::Sink));
    QCOMPARE(s.key_mark(4), std::optional(KvBlockState::Evicted));
    QCOMPARE(s.key_mark(7), std::optional<KvBlockState>());
    QCOMPARE(s.key_label(10), QStringLiteral("gen0"));
    QCOMPARE(s.key_label(6), QStringLiteral("p6"));
    // The heatmap greys the evicted cells the later row could not see.
    const LogRange range = log_range(*shown);
    std::vector<bool> gone(11, false);
    for (int c = 2; c <= 5; ++c) gone[size_t(c)] = true;
    const QImage img = attention_image(*shown, range, gone);
    QCOMPARE(qAlpha(img.pixel(3, 1)) > 0, true);  // grey, not transparent
    QCOMPARE(qGray(img.pixel(3, 1)), 128);
    QCOMPARE(qAlpha(attention_image(*shown, range).pixel(3, 1)), 0);
}

QTEST_MAIN(KvEvictionsTest)
#include "kv_evictions_test.moc"
