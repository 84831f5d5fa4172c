// Every panel fed a long run: once live (one decode step per batch, the panel on screen and painted
// between batches, as the window feeds it) and once as one large batch (a replayed run). Asserts
// what each panel folded; prints the slowest consume() and paint per panel (qInfo) so a change
// that makes a panel slow shows up in the log — timing is not asserted (shared CI machines).
#include <QApplication>
#include <QElapsedTimer>
#include <QLineSeries>
#include <QTabWidget>
#include <QTest>
#include <QTimer>
#include <algorithm>
#include <functional>

#include "panels/attention_panel.h"
#include "panels/kv_panel.h"
#include "panels/line_chart.h"
#include "panels/profiler_panel.h"
#include "panels/prompt_cache_panel.h"
#include "panels/spec_panel.h"
#include "panels/token_panel.h"
#include "synthetic_events.h"

using namespace fluoro;
using namespace fluoro::ui;

namespace {

constexpr int kTokens = 256;
constexpr int kHeads = 9;  // SmolLM2-135M: every head of layer 0 captured

// One batch per decode step, shaped like a real generation at telemetry level Full with layer-0
// attention capture on (every head) and speculative steps: the first batch holds the prompt, the
// prefix-cache report and the prefill.
std::vector<std::vector<Event>> live_run(uint64_t run) {
    std::vector<std::vector<Event>> batches;
    const auto prompt = test::chat_prompt();
    const int64_t n_prompt = int64_t(prompt.size());
    std::vector<Event> first;
    first.emplace_back(test::run_started(run, prompt));
    first.emplace_back(test::prefix(run, n_prompt, 10));
    first.emplace_back(test::step(run, 0, StepPhase::Prefill, n_prompt - 10, 1'000'000, 9'000'000));
    first.emplace_back(test::memory(run, 9'000'000, n_prompt * 18432, 4096ll * 18432));
    for (int h = 0; h < kHeads; ++h)
        first.emplace_back(test::attention(run, 0, 0, h, n_prompt, n_prompt));
    batches.push_back(std::move(first));
    for (int i = 0; i < kTokens; ++i) {
        std::vector<Event> b;
        const int64_t t0 = 10'000'000 + int64_t(i) * 15'000'000;
        b.emplace_back(test::step(run, i + 1, StepPhase::Decode, 1, t0, t0 + 12'000'000));
        b.emplace_back(test::token(run, i, 200 + i % 50, " w", 0.6,
                                   {{200 + i % 50, 0.6}, {300, 0.2}, {301, 0.1}}));
        b.emplace_back(
            test::memory(run, t0 + 12'000'000, (n_prompt + i + 1) * 18432, 4096ll * 18432));
        if (i > 0)
            for (int h = 0; h < kHeads; ++h)
                b.emplace_back(test::attention(run, i + 1, 0, h, 1, n_prompt + i));
        b.emplace_back(test::attention_stats(run, i + 1, 1, kHeads));
        b.emplace_back(test::mixed_kv(run, i + 1));
        if (i % 4 == 0)
            b.emplace_back(test::spec_step(
                run, i + 1,
                {test::draft(200, 0.5f, 0.6f, true), test::draft(201, 0.4f, 0.1f, false)}, 1, 202));
        batches.push_back(std::move(b));
    }
    RunFinished f;
    f.run = run;
    f.stop = "max_tokens";
    f.n_tokens = kTokens;
    f.t_ns = 10'000'000 + int64_t(kTokens) * 15'000'000 + 2'000'000;
    batches.push_back({Event(f)});
    return batches;
}

struct Timing {
    double max_consume_ms = 0, max_gap_ms = 0, total_consume_ms = 0;
    size_t slowest_batch = 0;
};

// Feeds `panel` (shown, 900×600) the live run as the window does: one batch per timer tick,
// the event loop running (painting, the charts' throttle timers) in between. A 5 ms probe timer
// records the largest gap in the event loop, as tests/ui/workbench/real_model_test does.
Timing feed_live(EventPanel& panel) {
    Timing t;
    panel.resize(900, 600);
    panel.show();
    if (!QTest::qWaitForWindowExposed(&panel)) qWarning("panel window not exposed");
    const auto batches = live_run(1);
    size_t next = 0;
    QElapsedTimer clock, probe_clock;
    QTimer feed, probe;
    feed.setInterval(10);
    probe.setInterval(5);
    QObject::connect(&feed, &QTimer::timeout, [&] {
        if (next >= batches.size()) return;
        clock.start();
        panel.consume(batches[next++]);
        const double c = double(clock.nsecsElapsed()) * 1e-6;
        if (c > t.max_consume_ms) t.slowest_batch = next - 1;
        t.max_consume_ms = std::max(t.max_consume_ms, c);
        t.total_consume_ms += c;
    });
    QObject::connect(&probe, &QTimer::timeout,
                     [&] { t.max_gap_ms = std::max(t.max_gap_ms, double(probe_clock.restart())); });
    probe_clock.start();
    feed.start();
    probe.start();
    while (next < batches.size()) QTest::qWait(50);
    // Let throttled charts catch up.
    QTest::qWait(LineChart::kThrottleMs + 50);
    return t;
}

// The whole run in one consume() (a replay), the panel on screen.
double feed_replay(EventPanel& panel) {
    std::vector<Event> all;
    for (auto& b : live_run(2))
        for (auto& e : b) all.push_back(std::move(e));
    panel.resize(900, 600);
    panel.show();
    if (!QTest::qWaitForWindowExposed(&panel)) qWarning("panel window not exposed");
    QElapsedTimer clock;
    clock.start();
    panel.consume(all);
    panel.repaint();
    QCoreApplication::processEvents();
    return double(clock.nsecsElapsed()) * 1e-6;
}

// replay_ms < 0: no replay measured.
void report(const char* name, const Timing& t, double replay_ms = -1) {
    const QString replay = replay_ms < 0
                               ? QString()
                               : QStringLiteral("; replay of %1 tokens in one batch: %2 ms")
                                     .arg(kTokens)
                                     .arg(replay_ms, 0, 'f', 1);
    qInfo(
        "%-15s live: max consume %6.2f ms (batch %zu), mean consume %5.2f ms, max event-loop "
        "gap %5.1f ms (5 ms probe)%s",
        name, t.max_consume_ms, t.slowest_batch, t.total_consume_ms / (kTokens + 2), t.max_gap_ms,
        qPrintable(replay));
}

}  // namespace

class LargeBatchTest : public QObject {
    Q_OBJECT
  private slots:
    void profiler();
    void line_chart_decimates();
    void attention();
    void kv();
    void speculative();
    void prompt_cache();
    void tokens();
};

void LargeBatchTest::profiler() {
    ProfilerPanel live;
    const Timing t = feed_live(live);
    ProfilerPanel replay;
    const double r = feed_replay(replay);
    report("profiler", t, r);
    // With each of the line charts' tabs on screen (their points go on the chart while fed).
    ProfilerPanel speed, memory;
    speed.findChild<QTabWidget*>()->setCurrentIndex(1);
    memory.findChild<QTabWidget*>()->setCurrentIndex(2);
    report("profiler/tok/s", feed_live(speed));
    report("profiler/memory", feed_live(memory));
    for (ProfilerPanel* p : {&live, &replay, &speed, &memory}) {
        QCOMPARE(p->state().steps().size(), size_t(kTokens + 1));
        QCOMPARE(p->state().memory().size(), size_t(kTokens + 1));
        QVERIFY(p->state().finished());
        // Every decode step is a point of the speed chart, every counter one of each memory series.
        QCOMPARE(p->speed_chart()->point_count(0), kTokens);
        QCOMPARE(p->memory_chart()->point_count(2), kTokens + 1);
        const TimeSplit s = p->state().split();
        QCOMPARE(s.steps[TimeSplit::Decode], int64_t(kTokens));
        QCOMPARE(*s.ms[TimeSplit::Decode], kTokens * 12.0 * 0.95);
        QVERIFY(p->notice().isEmpty());
        // Drawn series are capped (the charts in background tabs get their points when shown).
        p->speed_chart()->flush();
        p->memory_chart()->flush();
        // Drawn series are capped: at most LineChart::kMaxShownPoints points on screen.
        QVERIFY(p->speed_chart()->shown_point_count(0) > 0);
        QVERIFY(p->speed_chart()->shown_point_count(0) <= LineChart::kMaxShownPoints);
        QVERIFY(p->memory_chart()->shown_point_count(2) <= LineChart::kMaxShownPoints);
        // The step chart's tooltip still reaches the last step.
        if (p == &speed || p == &memory) continue;  // step chart not laid out
        StepStackChart* chart = p->step_chart();
        const QString tip = chart->tooltip_at(QPoint(chart->width() - 9, chart->height() - 30));
        QVERIFY2(tip.contains(QStringLiteral("step %1").arg(kTokens)), qPrintable(tip));
    }
}

void LargeBatchTest::line_chart_decimates() {
    LineChart chart(QStringLiteral("t"), QStringLiteral("s"), QStringLiteral("v"));
    const int s = chart.add_series(QStringLiteral("v"), Qt::blue);
    chart.resize(400, 300);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    QList<QPointF> points;
    for (int i = 0; i < 5000; ++i) points.append({i * 0.01, i == 3333 ? 99.0 : 1.0 + (i % 7)});
    chart.set_points(s, points.mid(0, 2500));
    chart.append_points(s, points.mid(2500));
    chart.flush();
    QCOMPARE(chart.point_count(s), 5000);
    QVERIFY(chart.shown_point_count(s) <= LineChart::kMaxShownPoints);
    QVERIFY(chart.shown_point_count(s) > LineChart::kMaxShownPoints / 2);
    // The spike, the first and the last point survive decimation.
    const auto* series = qobject_cast<QLineSeries*>(chart.chart()->series().at(0));
    QVERIFY(series);
    bool spike = false;
    for (const QPointF& p : series->points()) spike |= p.y() == 99.0;
    QVERIFY(spike);
    QCOMPARE(series->points().front(), points.front());
    QCOMPARE(series->points().back(), points.back());
    chart.clear_points();
    QCOMPARE(chart.point_count(s), 0);
    QCOMPARE(chart.shown_point_count(s), 0);
}

void LargeBatchTest::attention() {
    AttentionPanel live;
    const Timing t = feed_live(live);
    AttentionPanel replay;
    const double r = feed_replay(replay);
    report("attention", t, r);
    for (AttentionPanel* p : {&live, &replay}) {
        QCOMPARE(p->state().snapshot_count(), kHeads);
        QVERIFY(p->state().has_stats());
        QCOMPARE(p->state().n_heads(), kHeads);
        QVERIFY(p->notice().isEmpty());
    }
}

void LargeBatchTest::kv() {
    KvPanel live;
    const Timing t = feed_live(live);
    KvPanel replay;
    const double r = feed_replay(replay);
    report("kv", t, r);
    for (KvPanel* p : {&live, &replay}) {
        QCOMPARE(p->state().snapshots_seen(), kTokens);
        QCOMPARE(p->state().memory().size(), size_t(kTokens + 1));
        const auto counts = p->state().state_counts();
        QCOMPARE(counts[size_t(KvBlockState::Free)], 16);
    }
}

void LargeBatchTest::speculative() {
    SpecPanel live;
    const Timing t = feed_live(live);
    SpecPanel replay;
    const double r = feed_replay(replay);
    report("speculative", t, r);
    for (SpecPanel* p : {&live, &replay}) {
        QCOMPARE(int(p->state().rows().size()), kTokens / 4);
        QCOMPARE(p->state().drafted_total(), int64_t(kTokens / 4 * 2));
        QCOMPARE(p->state().accepted_total(), int64_t(kTokens / 4));
        QCOMPARE(p->step_model()->rowCount(), kTokens / 4);
    }
}

void LargeBatchTest::prompt_cache() {
    PromptCachePanel live;
    const Timing t = feed_live(live);
    PromptCachePanel replay;
    const double r = feed_replay(replay);
    report("prompt_cache", t, r);
    for (PromptCachePanel* p : {&live, &replay}) {
        QCOMPARE(p->state().requests().size(), size_t(1));
        QVERIFY(p->state().any_report());
    }
}

void LargeBatchTest::tokens() {
    TokenPanel live;
    const Timing t = feed_live(live);
    TokenPanel replay;
    const double r = feed_replay(replay);
    report("tokens", t, r);
    for (TokenPanel* p : {&live, &replay}) {
        QCOMPARE(p->state().tokens().size(), size_t(kTokens));
        QCOMPARE(p->token_model()->rowCount(), kTokens);
    }
}

QTEST_MAIN(LargeBatchTest)
#include "large_batch_test.moc"
