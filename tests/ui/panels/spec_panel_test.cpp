#include <QAbstractItemModelTester>
#include <QTest>

#include "panels/spec_panel.h"
#include "synthetic_events.h"

using namespace fluoro;
using namespace fluoro::ui;

namespace {
std::vector<Event> spec_run(uint64_t run) {
    using test::draft;
    std::vector<Event> ev = {test::run_started(run, test::chat_prompt())};
    // Step 1: 4 drafted, 2 accepted, the target resampled its own token.
    ev.emplace_back(test::spec_step(run, 1,
                                    {draft(103, 0.9f, 0.8f, true), draft(104, 0.7f, 0.6f, true),
                                     draft(105, 0.6f, 0.1f, false), draft(106, 0.5f, 0.2f, false)},
                                    2, 107));
    // Step 2: all 4 accepted plus a bonus token.
    ev.emplace_back(test::spec_step(run, 2,
                                    {draft(108, 0.9f, 0.9f, true), draft(109, 0.8f, 0.8f, true),
                                     draft(110, 0.7f, 0.8f, true), draft(111, 0.9f, 0.95f, true)},
                                    4, -1, 112));
    // Step 3: 3 drafted, none accepted.
    ev.emplace_back(
        test::spec_step(run, 3,
                        {draft(5000, 0.4f, 0.01f, false), draft(5001, 0.3f, 0.2f, false),
                         draft(5002, 0.3f, 0.2f, false)},
                        0, 103));
    return ev;
}
}  // namespace

class SpecPanelTest : public QObject {
    Q_OBJECT
  private slots:
    void not_active_without_draft_steps();
    void classifies_chips();
    void acceptance_over_run_and_by_position();
    void step_table_appends_and_resets_per_run();
    void hover_shows_draft_q_and_target_p();
    void reset_forgets_everything();
};

void SpecPanelTest::not_active_without_draft_steps() {
    SpecPanel panel;
    const QString expected =
        QStringLiteral("Speculative decoding is not active (no draft steps in this run).");
    QCOMPARE(panel.notice(), expected);
    panel.consume(test::synthetic_run(1));  // a plain run: tokens, steps, no SpecStep
    QCOMPARE(panel.notice(), expected);
    QVERIFY(!panel.state().active());
}

void SpecPanelTest::classifies_chips() {
    using test::draft;
    auto kinds = [](const SpecStep& s) {
        std::vector<ChipKind> k;
        for (const SpecChip& c : spec_chips(s)) k.push_back(c.kind);
        return k;
    };
    using K = ChipKind;
    const SpecStep rejected = test::spec_step(
        1, 1, {draft(1, .5f, .5f, true), draft(2, .5f, .1f, false), draft(3, .5f, .1f, false)}, 1,
        42);
    QCOMPARE(kinds(rejected),
             (std::vector<K>{K::Accepted, K::Rejected, K::Rejected, K::Resampled}));
    QVERIFY(!spec_chips(rejected).back().drafted);
    QCOMPARE(spec_chips(rejected).back().id, 42);
    const SpecStep bonus =
        test::spec_step(1, 2, {draft(1, .5f, .5f, true), draft(2, .5f, .6f, true)}, 2, -1, 9);
    QCOMPARE(kinds(bonus), (std::vector<K>{K::Accepted, K::Accepted, K::Bonus}));
    const SpecStep none = test::spec_step(1, 3, {draft(1, .5f, .5f, true)}, 1, -1);
    QCOMPARE(kinds(none), (std::vector<K>{K::Accepted}));
}

void SpecPanelTest::acceptance_over_run_and_by_position() {
    SpecPanel panel;
    panel.consume(spec_run(1));
    QVERIFY(panel.notice().isEmpty());
    const SpecState& s = panel.state();
    QCOMPARE(s.drafted_total(), int64_t(11));
    QCOMPARE(s.accepted_total(), int64_t(6));
    QCOMPARE(s.acceptance_rate(), 6.0 / 11.0);
    QCOMPARE(s.mean_accepted(), 2.0);
    QCOMPARE(s.by_position().size(), size_t(4));
    QCOMPARE(s.by_position()[0].drafted, int64_t(3));
    QCOMPARE(s.by_position()[0].accepted, int64_t(2));
    QCOMPARE(s.by_position()[2].accepted, int64_t(1));
    QCOMPARE(s.by_position()[3].drafted, int64_t(2));
    QCOMPARE(s.by_position()[3].rate(), 0.5);
    QVERIFY2(panel.summary().contains(QStringLiteral("acceptance 54.5%")),
             qPrintable(panel.summary()));
    // Drafted ids are named from the prompt's tokens where known.
    QCOMPARE(s.vocab().label(103), QStringLiteral("Why"));
    QCOMPARE(s.vocab().label(5000), QStringLiteral("#5000"));
}

void SpecPanelTest::step_table_appends_and_resets_per_run() {
    SpecPanel panel;
    QAbstractItemModelTester tester(panel.step_model(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    panel.consume(spec_run(1));
    SpecStepModel* m = panel.step_model();
    QCOMPARE(m->rowCount(), 3);
    QCOMPARE(m->index(1, SpecStepModel::Target).data().toString(),
             QStringLiteral("bonus assistant"));
    QCOMPARE(m->index(0, SpecStepModel::Rate).data(Qt::UserRole).toDouble(), 0.5);
    panel.consume({test::spec_step(1, 4, {test::draft(1, .5f, .5f, true)}, 1, -1)});
    QCOMPARE(m->rowCount(), 4);
    // A new run (and its first step in the same batch) replaces the rows.
    auto next = spec_run(2);
    next.resize(2);
    panel.consume(next);
    QCOMPARE(m->rowCount(), 1);
}

void SpecPanelTest::hover_shows_draft_q_and_target_p() {
    SpecPanel panel;
    panel.resize(800, 600);
    panel.show();
    panel.consume(spec_run(1));
    QString tip;
    for (int x = 0; x < 300 && tip.isEmpty(); x += 3)
        tip = panel.timeline()->tooltip_at(QPoint(x, 8));
    QVERIFY2(tip.contains(QStringLiteral("draft q 0.9000 · target p 0.8000")), qPrintable(tip));
    QVERIFY(tip.contains(QStringLiteral("accepted")));
}

void SpecPanelTest::reset_forgets_everything() {
    SpecPanel panel;
    QAbstractItemModelTester tester(panel.step_model(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    panel.consume(spec_run(1));
    panel.reset();
    QCOMPARE(panel.step_model()->rowCount(), 0);
    QVERIFY(!panel.state().active());
    QVERIFY(panel.notice().startsWith(QStringLiteral("Speculative decoding is not active")));
}

QTEST_MAIN(SpecPanelTest)
#include "spec_panel_test.moc"
