// The experts dock: the load grid's counts are the routing's, the picked token's experts are the
// decode step's that fed it, and every state without routing says why.
#include <QTableWidget>
#include <QTest>

#include "panels/expert_panel.h"
#include "synthetic_events.h"

using namespace fluoro;
using namespace fluoro::ui;

class ExpertPanelTest : public QObject {
    Q_OBJECT
  private slots:
    void folds_the_load_per_layer_and_expert();
    void picked_token_shows_the_decode_step_that_fed_it();
    void a_token_never_fed_says_so();
    void speculative_steps_count_but_are_not_filed_by_token();
    void dense_model_and_telemetry_off_say_why();
    void a_new_run_starts_over();
    void grid_tooltip_names_the_cell();
    void a_malformed_routing_is_named_not_counted();
};

namespace {
constexpr uint64_t kRun = 7;
constexpr int kTokens = 6;
// synthetic_run: the prefill (step 0) holds n_prompt - 10 tokens, decode steps 1..kTokens one each.
int64_t prefill_tokens() {
    return int64_t(test::chat_prompt().size()) - 10;
}
}  // namespace

void ExpertPanelTest::folds_the_load_per_layer_and_expert() {
    ExpertPanel panel;
    panel.consume(test::with_experts(test::synthetic_run(kRun, kTokens)));
    const ExpertState& load = panel.state();
    QCOMPARE(load.n_layer(), 4);
    QCOMPARE(load.n_expert(), 8);
    QCOMPARE(load.n_used(), 2);
    QCOMPARE(load.tokens(), prefill_tokens() + kTokens);
    // By hand (with_experts): layer l, token t of step s chose (s + t) % 8 and (s + t + l + 1) % 8.
    for (int32_t l = 0; l < 4; ++l) {
        std::vector<int64_t> want(8, 0);
        for (int64_t t = 0; t < prefill_tokens(); ++t) {
            ++want[size_t(t % 8)];
            ++want[size_t((t + l + 1) % 8)];
        }
        for (int64_t s = 1; s <= kTokens; ++s) {
            ++want[size_t(s % 8)];
            ++want[size_t((s + l + 1) % 8)];
        }
        for (int32_t e = 0; e < 8; ++e) QCOMPARE(load.count(l, e), want[size_t(e)]);
    }
    QVERIFY(panel.notice().isEmpty());
    QVERIFY2(panel.summary().contains(QStringLiteral("2 of 8 experts each, 4 layers")),
             qPrintable(panel.summary()));
    QVERIFY(panel.grid()->isVisibleTo(&panel));
    // Nothing picked: the latest token a decode step fed (token kTokens - 1, step kTokens).
    QCOMPARE(panel.shown_index(), int64_t(kTokens - 1));
    QCOMPARE(panel.token_table()->rowCount(), 4);
    QVERIFY2(panel.token_line().startsWith(QStringLiteral("Latest fed token 5")),
             qPrintable(panel.token_line()));
    QVERIFY(panel.token_line().contains(QStringLiteral("pick a token")));
}

void ExpertPanelTest::picked_token_shows_the_decode_step_that_fed_it() {
    ExpertPanel panel;
    panel.consume(test::with_experts(test::synthetic_run(kRun, kTokens)));
    panel.select_token(kRun, 2);
    // Token 2 was fed by the third decode step: step index 3 in synthetic_run.
    const ExpertState::TokenRoute* r = panel.state().route_of(2);
    QVERIFY(r);
    QCOMPARE(r->step, int64_t(3));
    const QTableWidget* t = panel.token_table();
    QCOMPARE(t->rowCount(), 4);
    QCOMPARE(t->columnCount(), 3);
    for (int l = 0; l < 4; ++l) {
        QCOMPARE(t->item(l, 1)->text(), QStringLiteral("%1 (0.600)").arg(3 % 8));
        QCOMPARE(t->item(l, 2)->text(), QStringLiteral("%1 (0.400)").arg((3 + l + 1) % 8));
    }
    QVERIFY2(panel.token_line().contains(QStringLiteral("token 2 “·looks”, fed at decode step 3")),
             qPrintable(panel.token_line()));
    panel.select_token(99, 1);  // another run: ignored
    QCOMPARE(panel.selected_index(), int64_t(2));
}

void ExpertPanelTest::a_token_never_fed_says_so() {
    ExpertPanel panel;
    // Drop the last decode step: the run ended on token kTokens - 1 without feeding it.
    std::vector<Event> ev = test::with_experts(test::synthetic_run(kRun, kTokens));
    for (auto it = ev.rbegin(); it != ev.rend(); ++it)
        if (std::holds_alternative<StepEvent>(*it)) {
            ev.erase(std::next(it).base());
            break;
        }
    panel.consume(ev);
    panel.select_token(kRun, kTokens - 1);
    QVERIFY(!panel.state().route_of(kTokens - 1));
    QVERIFY2(panel.token_line().contains(QStringLiteral("no decode step fed it")),
             qPrintable(panel.token_line()));
    QVERIFY(!panel.token_table()->isVisibleTo(&panel));
}

void ExpertPanelTest::speculative_steps_count_but_are_not_filed_by_token() {
    ExpertPanel panel;
    std::vector<Event> ev = test::synthetic_run(kRun, 2);
    StepEvent verify = test::step(kRun, 3, StepPhase::Verify, 5, 50'000'000, 60'000'000);
    ev.insert(ev.end() - 1, verify);
    panel.consume(test::with_experts(ev));
    QCOMPARE(panel.state().speculative_tokens(), int64_t(5));
    QCOMPARE(panel.state().tokens(), prefill_tokens() + 2 + 5);
    QVERIFY(panel.state().route_of(1));
    QVERIFY(!panel.state().route_of(2));  // the verify step's rows are not token 2's
    QVERIFY2(panel.summary().contains(QStringLiteral("5 of them in draft/verify steps")),
             qPrintable(panel.summary()));
}

void ExpertPanelTest::dense_model_and_telemetry_off_say_why() {
    ExpertPanel panel;
    QVERIFY(panel.notice().contains(QStringLiteral("No run yet")));
    panel.consume(test::synthetic_run(kRun, 3));  // steps without routing: a dense model
    QVERIFY2(panel.notice().contains(QStringLiteral("the model is dense")),
             qPrintable(panel.notice()));
    QVERIFY(!panel.grid()->isVisibleTo(&panel));
    // Telemetry Off: no StepEvents at all, then the run finishes.
    std::vector<Event> off;
    for (const Event& e : test::synthetic_run(kRun + 1, 3))
        if (!std::holds_alternative<StepEvent>(e)) off.push_back(e);
    panel.consume(off);
    QVERIFY2(panel.notice().contains(QStringLiteral("telemetry Off")), qPrintable(panel.notice()));
}

void ExpertPanelTest::a_new_run_starts_over() {
    ExpertPanel panel;
    panel.consume(test::with_experts(test::synthetic_run(kRun, kTokens)));
    panel.select_token(kRun, 1);
    panel.consume(test::with_experts(test::synthetic_run(kRun + 1, 2), 2, 4, 1));
    QCOMPARE(panel.selected_index(), int64_t(-1));
    QCOMPARE(panel.state().n_layer(), 2);
    QCOMPARE(panel.state().tokens(), prefill_tokens() + 2);
    panel.reset();
    QVERIFY(panel.state().empty());
    QVERIFY(panel.notice().contains(QStringLiteral("No run yet")));
}

void ExpertPanelTest::grid_tooltip_names_the_cell() {
    ExpertPanel panel;
    panel.resize(800, 600);
    panel.show();
    panel.consume(test::with_experts(test::synthetic_run(kRun, kTokens)));
    panel.select_token(kRun, 2);
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    const ExpertLoadGrid* g = panel.grid();
    // Find the cell of layer 1, expert 3 (token 2's first expert) by scanning the widget.
    QPoint at(-1, -1);
    for (int y = 0; y < g->height() && at.x() < 0; ++y)
        for (int x = 0; x < g->width(); ++x)
            if (g->cell_at({x, y}) == std::make_pair(1, 3)) {
                at = {x + 2, y + 2};
                break;
            }
    QVERIFY(at.x() >= 0);
    const QString tip = g->tooltip_at(at);
    QVERIFY2(tip.startsWith(QStringLiteral("layer 1, expert 3: ")), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("the picked token went here, router weight 0.600")),
             qPrintable(tip));
    QVERIFY(g->cell_at({0, 0}).first == -1);  // the label margin
    test::save_shot(panel, QStringLiteral("panel-experts"));
}

void ExpertPanelTest::a_malformed_routing_is_named_not_counted() {
    ExpertPanel panel;
    std::vector<Event> ev = test::with_experts(test::synthetic_run(kRun, 3));
    for (Event& e : ev)
        if (auto* s = std::get_if<StepEvent>(&e); s && s->index == 2) {
            auto bad = std::make_shared<ExpertRouting>(*s->experts);
            bad->experts[0] = 9;  // of 8
            s->experts = bad;
        }
    panel.consume(ev);
    QVERIFY2(panel.notice().contains(QStringLiteral("Step 2's expert routing was not counted: "
                                                    "expert 9 of 8")),
             qPrintable(panel.notice()));
    QCOMPARE(panel.state().tokens(), prefill_tokens() + 2);  // steps 0, 1 and 3
    QVERIFY(!panel.state().route_of(1));                     // step 2 fed token 1: not filed
    QVERIFY(panel.state().route_of(2));  // step 3 fed token 2: still filed as token 2
    QCOMPARE(panel.state().route_of(2)->step, int64_t(3));
}

QTEST_MAIN(ExpertPanelTest)
#include "expert_panel_test.moc"
