// The attention overview dock: asked for when a token is picked and the dock is on screen; the
// glyph grid names each head's pattern; a click shows the head's row, max-pooled over key blocks
// when there are more keys than pixels, with the exact key on hover; the engine's reason otherwise.
#include <QSignalSpy>
#include <QTest>

#include "panels/overview_panel.h"
#include "synthetic_events.h"

using namespace fluoro;
using namespace fluoro::ui;

class OverviewPanelTest : public QObject {
    Q_OBJECT
  private slots:
    void a_pick_asks_for_the_overview_when_on_screen();
    void the_grid_names_each_heads_pattern();
    void a_click_shows_the_row_pooled_with_exact_hover();
    void the_engines_reason_is_shown();
};

namespace {
constexpr uint64_t kRun = 7;

// 3 layers x 4 heads over `keys` keys: head h of layer l puts 0.9 on key (l * 4 + h) * 37 % keys
// (the rest spread evenly); its label cycles through the patterns.
std::shared_ptr<const AttentionOverview> overview(int64_t token, int64_t keys) {
    auto o = std::make_shared<AttentionOverview>();
    o->run = kRun;
    o->token = token;
    o->position = keys - 1;
    o->n_layer = 3;
    o->n_head = 4;
    o->ms = 4.5;
    for (int64_t k = 0; k < keys; ++k) o->key_pieces.push_back(" k" + std::to_string(k));
    for (int l = 0; l < 3; ++l)
        for (int h = 0; h < 4; ++h) {
            const int64_t hot = (l * 4 + h) * 37 % keys;
            for (int64_t k = 0; k < keys; ++k)
                o->weights.push_back(k == hot ? 0.9f : 0.1f / float(keys - 1));
            HeadPattern p;
            p.label = AttentionPattern((l * 4 + h) % 7);
            p.max_key = hot;
            p.max_weight = 0.9f;
            o->heads.push_back(p);
        }
    return o;
}
}  // namespace

void OverviewPanelTest::a_pick_asks_for_the_overview_when_on_screen() {
    OverviewPanel panel;
    QSignalSpy spy(&panel, &EventPanel::request_command);
    panel.select_token(kRun, 2);
    QCOMPARE(spy.count(), 0);  // hidden
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QTRY_COMPARE(spy.count(), 1);  // once painted: on screen
    QCOMPARE(spy.at(0).at(0).toString(), QStringLiteral("overview"));
    const auto c = spy.at(0).at(1).value<Command>();
    const auto* o = std::get_if<ComputeAttentionOverview>(&c);
    QVERIFY(o);
    QCOMPARE(o->run, kRun);
    QCOMPARE(o->token, int64_t(2));
    panel.consume({overview(1, 50)});  // an answer to another pick: ignored
    QVERIFY(!panel.overview());
    panel.consume({overview(2, 50)});
    QVERIFY(panel.overview());
}

void OverviewPanelTest::the_grid_names_each_heads_pattern() {
    OverviewPanel panel;
    panel.resize(600, 700);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.select_token(kRun, 2);
    panel.consume({overview(2, 50)});
    QCoreApplication::processEvents();  // lay the shown grid out
    QVERIFY2(panel.headline().contains(QStringLiteral("3 layers × 4 heads")),
             qPrintable(panel.headline()));
    // 12 heads, labels cycling through 7 patterns: induction, previous, own, sink, local twice.
    QVERIFY2(panel.headline().contains(QStringLiteral("2 induction, 2 previous token, 2 own token, "
                                                      "2 sink, 2 local, 1 diffuse, 1 mixed")),
             qPrintable(panel.headline()));
    const HeadPatternGrid* g = panel.grid();
    QPoint at(-1, -1);
    for (int y = 0; y < g->height() && at.x() < 0; ++y)
        for (int x = 0; x < g->width(); ++x)
            if (g->cell_at({x, y}) == std::make_pair(1, 2)) {
                at = {x + 1, y + 1};
                break;
            }
    QVERIFY(at.x() >= 0);
    // Layer 1 head 2 is head 6: pattern 6 = mixed.
    QVERIFY2(g->tooltip_at(at).startsWith(QStringLiteral("layer 1, head 2: mixed")),
             qPrintable(g->tooltip_at(at)));
    QVERIFY(panel.detail().contains(QStringLiteral("Click a head")));
    QVERIFY(!panel.strip()->isVisibleTo(&panel));
}

void OverviewPanelTest::a_click_shows_the_row_pooled_with_exact_hover() {
    OverviewPanel panel;
    panel.resize(600, 700);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.select_token(kRun, 2);
    const int64_t keys = 5000;  // more keys than pixels: pooled
    panel.consume({overview(2, keys)});
    panel.choose_head(2, 1);            // head 9: hot key 9 * 37 = 333
    QCoreApplication::processEvents();  // lay the shown strip out
    QVERIFY(panel.strip()->isVisibleTo(&panel));
    QVERIFY(panel.detail().startsWith(QStringLiteral("Layer 2, head 1:")));
    const KeyStrip* s = panel.strip();
    QVERIFY(s->width() < keys);
    // Every key is in exactly one pixel column, and the column holding key 333 shows 0.9.
    int64_t next = 0;
    bool found = false;
    for (int x = 0; x < s->width(); ++x) {
        const KeyStrip::Block b = s->block_at(x);
        if (b.first < 0) continue;
        QCOMPARE(b.first, next);
        next = b.last + 1;
        if (b.first <= 333 && 333 <= b.last) {
            found = true;
            QCOMPARE(b.max_key, int64_t(333));
            QCOMPARE(b.max, 0.9f);
            QVERIFY2(s->tooltip_at({x, 10}).contains(QStringLiteral("most attended key 333 ·k333")),
                     qPrintable(s->tooltip_at({x, 10})));
        }
    }
    QCOMPARE(next, keys);
    QVERIFY(found);
    test::save_shot(panel, QStringLiteral("panel-overview"));
}

void OverviewPanelTest::the_engines_reason_is_shown() {
    OverviewPanel panel;
    panel.select_token(kRun, 5);
    auto o = std::make_shared<AttentionOverview>();
    o->run = kRun;
    o->token = 5;
    o->error = "token 5 of run 7 was never fed to the model";
    panel.consume({o});
    QVERIFY2(panel.headline().startsWith(QStringLiteral("No overview for token 5: token 5")),
             qPrintable(panel.headline()));
    QVERIFY(!panel.grid()->isVisibleTo(&panel));
    panel.reset();
    QVERIFY(!panel.overview());
}

QTEST_MAIN(OverviewPanelTest)
#include "overview_panel_test.moc"
