#include <QAbstractItemModelTester>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>

#include "panels/line_chart.h"
#include "panels/profiler_panel.h"
#include "panels/roofline_chart.h"
#include "panels/step_timeline.h"
#include "synthetic_events.h"

using namespace fluoro;
using namespace fluoro::ui;

class ProfilerPanelTest : public QObject {
    Q_OBJECT
  private slots:
    void says_no_steps_yet();
    void why_is_it_slow_split();
    void op_times_only_at_level_full();
    void charts_over_the_run();
    void step_tooltip_lists_categories();
    void reset_forgets_everything();
    void timeline_shows_the_latest_traced_step();
};

void ProfilerPanelTest::says_no_steps_yet() {
    ProfilerPanel panel;
    QVERIFY(panel.notice().startsWith(QStringLiteral("No steps yet")));
}

void ProfilerPanelTest::why_is_it_slow_split() {
    ProfilerPanel panel;
    QAbstractItemModelTester tester(panel.split_model(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    panel.consume(test::synthetic_run(1, 6));
    const TimeSplit s = panel.state().split();
    // Prefill: one 8 ms step, 5% of it sampling; decode: six 12 ms steps.
    QVERIFY(!s.ms[TimeSplit::Load].has_value());
    QCOMPARE(*s.ms[TimeSplit::Prefill], 8.0 * 0.95);
    QCOMPARE(*s.ms[TimeSplit::Decode], 6 * 12.0 * 0.95);
    QCOMPARE(*s.ms[TimeSplit::Sampling], (8.0 + 6 * 12.0) * 0.05);
    QCOMPARE(*s.ms[TimeSplit::Draft], 0.0);
    QCOMPARE(*s.ms[TimeSplit::Verify], 0.0);
    QCOMPARE(s.total_ms, 102.0);  // RunFinished at 102 ms
    QCOMPARE(*s.ms[TimeSplit::Between], 102.0 - 80.0);
    QCOMPARE(s.tokens[TimeSplit::Prefill], int64_t(4));
    QCOMPARE(s.steps[TimeSplit::Decode], int64_t(6));
    ProfileSplitModel* m = panel.split_model();
    QCOMPARE(m->rowCount(), int(TimeSplit::PartCount));
    QCOMPARE(m->index(TimeSplit::Load, ProfileSplitModel::Time).data().toString(),
             QStringLiteral("not reported"));
    QCOMPARE(m->index(TimeSplit::Decode, ProfileSplitModel::Part).data().toString(),
             QStringLiteral("decode"));
    QCOMPARE(m->index(TimeSplit::Decode, ProfileSplitModel::Time).data(Qt::UserRole).toDouble(),
             68.4);
    QVERIFY(m->index(TimeSplit::Prefill, ProfileSplitModel::Tokens)
                .data()
                .toString()
                .contains(QStringLiteral("tok/s")));
}

void ProfilerPanelTest::op_times_only_at_level_full() {
    ProfilerPanel panel;
    panel.consume({test::run_started(1, test::chat_prompt()),
                   test::step(1, 0, StepPhase::Prefill, 14, 0, 5'000'000, false)});
    QVERIFY(!panel.state().has_op_times());
    QCOMPARE(*panel.state().split().ms[TimeSplit::Sampling], 0.0);
    QCOMPARE(*panel.state().split().ms[TimeSplit::Prefill], 5.0);
    panel.consume({test::step(1, 1, StepPhase::Decode, 1, 5'000'000, 6'000'000, true)});
    QVERIFY(panel.state().has_op_times());
}

void ProfilerPanelTest::charts_over_the_run() {
    ProfilerPanel panel;
    panel.consume(test::synthetic_run(1, 6));
    QCOMPARE(panel.speed_chart()->point_count(0), 6);   // one per decode step
    QCOMPARE(panel.memory_chart()->point_count(0), 7);  // one per MemoryCounters
    panel.consume({test::run_started(2, test::chat_prompt())});
    QCOMPARE(panel.speed_chart()->point_count(0), 0);
}

void ProfilerPanelTest::step_tooltip_lists_categories() {
    ProfilerPanel panel;
    panel.resize(800, 600);
    panel.show();
    panel.consume(test::synthetic_run(1, 6));
    StepStackChart* chart = panel.step_chart();
    QString tip;
    for (int x = 0; x < chart->width() && tip.isEmpty(); x += 2)
        tip = chart->tooltip_at(QPoint(x, chart->height() - 40));
    QVERIFY2(tip.startsWith(QStringLiteral("step 0 · prefill · 4 tokens")), qPrintable(tip));
    QVERIFY(tip.contains(QStringLiteral("matmul: 4.00 ms")));
    QVERIFY(tip.contains(QStringLiteral("sampling")));
}

void ProfilerPanelTest::reset_forgets_everything() {
    ProfilerPanel panel;
    QAbstractItemModelTester tester(panel.split_model(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    panel.consume(test::synthetic_run(1));
    panel.reset();
    QVERIFY(panel.state().steps().empty());
    QVERIFY(panel.notice().startsWith(QStringLiteral("No steps yet")));
    QCOMPARE(panel.split_model()
                 ->index(TimeSplit::Decode, ProfileSplitModel::Time)
                 .data(Qt::UserRole)
                 .toDouble(),
             0.0);
}

// Decode steps 2 and 3 traced (two layers of a matmul and attention, then the LM head; two
// threads): the timeline shows step 3, the latest; hovering its ops row names an op with its
// layer, time and GB/s, its layers row a layer, the engine row the thread's work.
void ProfilerPanelTest::timeline_shows_the_latest_traced_step() {
    ProfilerPanel panel;
    panel.resize(1000, 600);
    panel.show();
    std::vector<Event> ev = test::synthetic_run(1, 4);
    for (Event& e : ev) {
        auto* s = std::get_if<StepEvent>(&e);
        if (!s || s->index < 2 || s->index > 3) continue;  // step 4, the last, is not traced
        auto t = std::make_shared<StepTrace>();
        t->names = {"attn_q+attn_k+attn_v", "attention", "lm_head(output)"};
        t->threads = 2;
        const int64_t q = (s->end_ns - s->start_ns) / 6;  // five ops of a sixth each
        int64_t at = s->start_ns;
        for (int32_t layer = 0; layer < 2; ++layer)
            for (int32_t name : {0, 1}) {
                // QKV reads 2e6 bytes, attention 1e6; both do 1e6 operations.
                t->ops.push_back(
                    {at, at + q, name, layer, 1, TimeCategory(name), name == 0 ? 2e6 : 1e6, 1e6});
                t->workers.push_back({at, at + q / 2, 0, 4});
                t->workers.push_back({at + q / 2, at + q, 0, 0});
                t->workers.push_back({at, at + q, 1, 4});
                at += q;
            }
        t->ops.push_back({at, at + q, 2, -1, 1, TimeCategory::LmHead, 8e6, 4e6});
        s->trace = t;
    }
    QVERIFY(panel.timeline()->headline().startsWith(QStringLiteral("No traced step")));
    panel.consume(ev);
    StepTimeline* tl = panel.timeline();
    QVERIFY(tl->step().has_value());
    QCOMPARE(tl->step()->index, int64_t(3));
    QVERIFY2(
        tl->headline().startsWith(QStringLiteral("decode step 3 · 12.00 ms · 5 ops in 2 layers")),
        qPrintable(tl->headline()));
    tl->resize(900, 200);
    const auto row_y = [&](int row) { return tl->row_middle(row); };
    // x of the middle of the first op: the plot starts after the labels; scan for it instead.
    QString op_tip, layer_tip, engine_tip;
    for (int x = 0; x < tl->width() && (op_tip.isEmpty() || layer_tip.isEmpty()); ++x) {
        if (op_tip.isEmpty()) op_tip = tl->tooltip_at(QPoint(x, row_y(1)));
        if (layer_tip.isEmpty()) layer_tip = tl->tooltip_at(QPoint(x, row_y(0)));
        if (engine_tip.isEmpty()) engine_tip = tl->tooltip_at(QPoint(x, row_y(2)));
    }
    // 2e6 bytes in 2 ms: 1 GB/s.
    QVERIFY2(op_tip.startsWith(QStringLiteral("attn_q+attn_k+attn_v · layer 0 · matmul · 2.00 ms")),
             qPrintable(op_tip));
    QVERIFY2(op_tip.contains(QStringLiteral("1.00 GB/s")), qPrintable(op_tip));
    QVERIFY2(layer_tip.startsWith(QStringLiteral("layer 0 · 4.00 ms · 2 ops")),
             qPrintable(layer_tip));
    QVERIFY2(engine_tip.startsWith(QStringLiteral("engine thread · 4 task(s)")),
             qPrintable(engine_tip));

    // The same step's roofline: one point per op that read bytes and computed (QKV, attention,
    // the LM head); no roofs until limits are given. Attention, both layers summed, read 2e6
    // bytes and did 2e6 operations in 4 ms: 1 operation per byte at 0.5 GFLOP/s; under a 10 GB/s
    // roof it could reach 10 x 1 = 10 GFLOP/s (below the FMA peak of 100): 5 %.
    RooflineChart* roof = panel.roofline();
    QCOMPARE(roof->point_count(), size_t(3));
    QVERIFY2(roof->headline().contains(QStringLiteral("no roofs")), qPrintable(roof->headline()));
    roof->resize(900, 400);
    roof->set_limits(RooflineChart::Limits{10.0, 100.0, 400.0, 2});
    const std::optional<QPointF> at = roof->point_of(QStringLiteral("attention"));
    QVERIFY(at.has_value());
    const QString tip = roof->tooltip_at(at->toPoint());
    QVERIFY2(tip.startsWith(QStringLiteral("attention · 2 call(s) · 4000.0 µs")), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("5.0 % of its roof (FMA)")), qPrintable(tip));
    QSignalSpy asked(roof, &RooflineChart::measure_requested);
    roof->measure_button()->click();
    QCOMPARE(asked.count(), 1);

    // Picking the other traced step (decode step 2, position 2 after the prefill) shows it; an
    // untraced one cannot be picked; clicking its bar in the per-step chart picks it too.
    QVERIFY(panel.pick_step(2));
    QCOMPARE(tl->step()->index, int64_t(2));
    QVERIFY(!panel.pick_step(1));
    QCOMPARE(tl->step()->index, int64_t(2));
    StepStackChart* chart = panel.step_chart();
    int x3 = -1;
    for (int x = 0; x < chart->width() && x3 < 0; ++x)
        if (chart->step_at(QPoint(x, chart->height() - 40)) == 3) x3 = x;
    QVERIFY(x3 >= 0);
    QVERIFY(chart->tooltip_at(QPoint(x3, chart->height() - 40))
                .contains(QStringLiteral("click: its timeline")));
    QTest::mouseClick(chart, Qt::LeftButton, {}, QPoint(x3, chart->height() - 40));
    QCOMPARE(tl->step()->index, int64_t(3));

    panel.reset();
    QVERIFY(!panel.timeline()->step().has_value());
    QCOMPARE(panel.roofline()->point_count(), size_t(0));
}

QTEST_MAIN(ProfilerPanelTest)
#include "profiler_panel_test.moc"
