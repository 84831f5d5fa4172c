// The logit lens dock: a picked token is asked for (only when the dock is on screen), the answer
// to the latest request is shown output-first with the token's rank per layer, and the engine's
// reason is shown when there is no lens.
#include <QSignalSpy>
#include <QTableWidget>
#include <QTest>

#include "panels/lens_panel.h"
#include "synthetic_events.h"

using namespace fluoro;
using namespace fluoro::ui;

class LensPanelTest : public QObject {
    Q_OBJECT
  private slots:
    void a_pick_asks_for_the_lens_when_on_screen();
    void shows_the_answer_output_first();
    void only_the_latest_request_is_shown();
    void the_engines_reason_is_shown();
    void reset_forgets();
};

namespace {
constexpr uint64_t kRun = 7;

// 4 layers over a vocabulary where token 202 (" looks") climbs from rank 5 to the top at layer 3.
std::shared_ptr<const LogitLensEvent> lens(int64_t token, std::string error = {}) {
    auto l = std::make_shared<LogitLensEvent>();
    l->run = kRun;
    l->token = token;
    l->error = std::move(error);
    if (!l->error.empty()) return l;
    l->position = 20 + token;
    l->input = 201;
    l->target = 202;
    l->input_piece = " sky";
    l->target_piece = " looks";
    l->ms = 12.5;
    const int64_t ranks[] = {5, 1, 0, 0};
    for (int il = 0; il < 4; ++il) {
        DistTop d;
        d.entropy = 3.0 - 0.5 * il;
        d.target_rank = ranks[il];
        d.target_logprob = float(std::log(0.1 + 0.2 * il));
        std::vector<std::string> texts;
        for (int j = 0; j < 3; ++j) {
            const int32_t id = ranks[il] == j ? 202 : 300 + j;
            d.top.push_back({id, float(std::log(0.5 / (j + 1)))});
            texts.push_back(id == 202 ? " looks" : "#" + std::to_string(id));
        }
        l->layers.push_back(d);
        l->pieces.push_back(texts);
    }
    return l;
}
}  // namespace

void LensPanelTest::a_pick_asks_for_the_lens_when_on_screen() {
    LensPanel panel;
    QSignalSpy spy(&panel, &EventPanel::request_command);
    panel.consume(test::synthetic_run(kRun, 4));
    panel.select_token(kRun, 2);  // hidden: remembered, not sent
    QCOMPARE(spy.count(), 0);
    QVERIFY(panel.request_pending());
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QTRY_COMPARE(spy.count(), 1);  // once painted: on screen
    QCOMPARE(spy.at(0).at(0).toString(), QStringLiteral("lens"));
    const auto c = spy.at(0).at(1).value<Command>();
    const auto* l = std::get_if<ComputeLogitLens>(&c);
    QVERIFY(l);
    QCOMPARE(l->run, kRun);
    QCOMPARE(l->token, int64_t(2));
    QCOMPARE(l->top_k, LensPanel::kTopK);
    panel.select_token(kRun, 2);  // the same pick again: nothing new to ask
    QCOMPARE(spy.count(), 1);
    panel.select_token(kRun, 3);  // on screen: sent at once
    QCOMPARE(spy.count(), 2);
    QVERIFY(panel.headline().contains(QStringLiteral("computing")));
}

void LensPanelTest::shows_the_answer_output_first() {
    LensPanel panel;
    panel.consume(test::synthetic_run(kRun, 4));
    panel.select_token(kRun, 2);
    panel.consume({lens(2)});
    const QTableWidget* t = panel.table();
    QCOMPARE(t->rowCount(), 4);
    QCOMPARE(t->columnCount(), 4 + 3);
    QCOMPARE(t->item(0, 0)->text(), QStringLiteral("4"));  // the output first
    QCOMPARE(t->item(3, 0)->text(), QStringLiteral("1"));
    QCOMPARE(t->item(3, 1)->text(), QStringLiteral("5"));  // rank after layer 1
    QCOMPARE(t->item(0, 1)->text(), QStringLiteral("0"));
    QCOMPARE(t->item(0, 4)->text(), QStringLiteral("·looks 0.50"));
    QVERIFY(t->item(0, 4)->font().bold());  // the token itself
    QVERIFY(!t->item(0, 5)->font().bold());
    QVERIFY2(panel.headline().contains(QStringLiteral("the top prediction from layer 3 on")),
             qPrintable(panel.headline()));
    QVERIFY(panel.headline().contains(QStringLiteral("Token 2 ·looks, predicted at position 22")));
}

void LensPanelTest::only_the_latest_request_is_shown() {
    LensPanel panel;
    panel.consume(test::synthetic_run(kRun, 4));
    panel.select_token(kRun, 1);
    panel.select_token(kRun, 3);
    panel.consume({lens(1)});  // the answer to a request since replaced
    QVERIFY(!panel.lens());
    panel.consume({lens(3)});
    QVERIFY(panel.lens());
    QCOMPARE(panel.lens()->token, int64_t(3));
}

void LensPanelTest::the_engines_reason_is_shown() {
    LensPanel panel;
    panel.consume(test::synthetic_run(kRun, 4));
    panel.select_token(kRun, 1);
    panel.consume({lens(1, "run 7 is not the live conversation's latest run (run 9 is)")});
    QVERIFY2(panel.headline().startsWith(QStringLiteral("No lens for token 1: run 7 is not")),
             qPrintable(panel.headline()));
    QVERIFY(!panel.table()->isVisibleTo(&panel));
}

void LensPanelTest::reset_forgets() {
    LensPanel panel;
    panel.consume(test::synthetic_run(kRun, 4));
    panel.select_token(kRun, 2);
    panel.consume({lens(2)});
    panel.reset();
    QVERIFY(!panel.lens());
    QCOMPARE(panel.wanted_token(), int64_t(-1));
    QVERIFY(panel.headline().startsWith(QStringLiteral("Pick a generated token")));
}

QTEST_MAIN(LensPanelTest)
#include "lens_panel_test.moc"
