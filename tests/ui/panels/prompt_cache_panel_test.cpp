#include <QAbstractItemModelTester>
#include <QTest>

#include "panels/prefix_tree_view.h"
#include "panels/prompt_cache_panel.h"
#include "synthetic_events.h"

using namespace fluoro;
using namespace fluoro::ui;

class PromptCachePanelTest : public QObject {
    Q_OBJECT
  private slots:
    void says_no_requests_yet();
    void without_reports_says_not_active();
    void reused_span_and_first_diverging_token();
    void whole_prompt_reused_and_nothing_reused();
    void hit_rate_over_requests();
    void prefix_tree_is_honestly_not_active();
    void prefix_tree_draws_the_path_and_the_entries();
    void divergence_names_both_tokens();
    void reset_forgets_everything();
};

void PromptCachePanelTest::says_no_requests_yet() {
    PromptCachePanel panel;
    QVERIFY(panel.notice().startsWith(QStringLiteral("No requests yet")));
}

void PromptCachePanelTest::without_reports_says_not_active() {
    PromptCachePanel panel;
    QAbstractItemModelTester tester(panel.request_model(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    panel.consume({test::run_started(1, test::chat_prompt())});
    QVERIFY(panel.notice().isEmpty());
    QVERIFY(!panel.state().any_report());
    QCOMPARE(panel.request_model()->index(0, PromptCacheModel::HitRate).data().toString(),
             QStringLiteral("no report"));
    QVERIFY2(panel.summary().contains(QStringLiteral("prompt cache not active")),
             qPrintable(panel.summary()));
    QVERIFY(panel.tree_notice().startsWith(QStringLiteral("Prompt cache not active")));
}

void PromptCachePanelTest::reused_span_and_first_diverging_token() {
    PromptCachePanel panel;
    QAbstractItemModelTester tester(panel.request_model(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    panel.consume({test::run_started(1, test::chat_prompt()), test::prefix(1, 14, 10)});
    const PromptRequest& r = panel.state().requests().at(0);
    QCOMPARE(r.hit_rate(), 10.0 / 14.0);
    QCOMPARE(r.first_diverging(), std::optional<int64_t>(10));
    PromptCacheModel* m = panel.request_model();
    QCOMPARE(m->index(0, PromptCacheModel::Reused).data().toLongLong(), 10);
    QCOMPARE(m->index(0, PromptCacheModel::Recomputed).data().toLongLong(), 4);
    QCOMPARE(m->index(0, PromptCacheModel::Diverging).data().toString(),
             QStringLiteral("#10 “↵” (new)"));
    QCOMPARE(m->index(0, PromptCacheModel::HitRate).data(Qt::UserRole).toDouble(), 10.0 / 14.0);
    QVERIFY2(panel.summary().contains(QStringLiteral("#10")), qPrintable(panel.summary()));
    QCOMPARE(panel.shown_request(), 0);
}

void PromptCachePanelTest::whole_prompt_reused_and_nothing_reused() {
    PromptCachePanel panel;
    panel.consume({test::run_started(1, test::chat_prompt()), test::prefix(1, 14, 14)});
    QCOMPARE(panel.state().requests()[0].first_diverging(), std::optional<int64_t>());
    QVERIFY(panel.summary().contains(QStringLiteral("whole prompt was reused")));
    panel.consume({test::run_started(2, test::chat_prompt()), test::prefix(2, 14, 0)});
    QCOMPARE(panel.shown_request(), 1);  // follows the latest
    QVERIFY2(panel.summary().contains(QStringLiteral("nothing matched")),
             qPrintable(panel.summary()));
}

void PromptCachePanelTest::hit_rate_over_requests() {
    PromptCachePanel panel;
    panel.consume({test::run_started(1, test::chat_prompt()), test::prefix(1, 14, 0),
                   test::run_started(2, test::chat_prompt()), test::prefix(2, 14, 13),
                   test::run_started(3, test::chat_prompt())});  // 3: no report yet
    QCOMPARE(panel.state().requests().size(), size_t(3));
    QCOMPARE(panel.state().overall_hit_rate(), 13.0 / 28.0);
    QCOMPARE(panel.request_model()->rowCount(), 3);
    // A report for an earlier run lands on that run's request.
    panel.consume({test::prefix(3, 14, 7)});
    QCOMPARE(panel.state().requests()[2].cache->cached_tokens, int64_t(7));
    panel.show_request(0);
    QCOMPARE(panel.shown_request(), 0);
}

void PromptCachePanelTest::prefix_tree_is_honestly_not_active() {
    PromptCachePanel panel;
    panel.consume({test::run_started(1, test::chat_prompt()), test::prefix(1, 14, 10)});
    QVERIFY2(panel.tree_notice().contains(QStringLiteral("empty or off")),
             qPrintable(panel.tree_notice()));
    // With the cache's size reported but no tree (a stored run), the notice says both.
    PrefixCacheEvent e = test::prefix(2, 14, 12);
    e.cache_entries = 3;
    e.cache_tokens = 40;
    panel.consume({test::run_started(2, test::chat_prompt()), e});
    QVERIFY2(panel.tree_notice().contains(QStringLiteral("holds 3 entries, 40 tokens")),
             qPrintable(panel.tree_notice()));
    QVERIFY(
        panel.tree_notice().contains(QStringLiteral("runs stored before schema 9 do not keep it")));
    QVERIFY(panel.tree_view()->rows().empty());
}

// A live report's tree: one row per node below the root, in pre-order; the path the prompt took
// marked whole or up to where it diverged; entries with their recency.
void PromptCachePanelTest::prefix_tree_draws_the_path_and_the_entries() {
    PromptCachePanel panel;
    PrefixCacheEvent e = test::prefix(4, 14, 6);
    e.cache_entries = 2;
    e.cache_tokens = 14;
    e.evicted_entries = 1;
    //  root ── "<|im_start|>system…" (6, shared by 2) ─┬─ "You are…" (2, entry, recent 1)
    //                                                  └─ "Be brief" (2, entry, most recent)
    e.tree = {{-1, 0, 0, "", -1, -1, 2, 0, 0},
              {0, 6, 6, "<|im_start|>system", -1, -1, 2, 6, 6 * 100},
              {1, 8, 2, " You are", 1, 1, 1, 1, 2 * 100},
              {1, 8, 2, " Be brief", 2, 0, 1, 0, 2 * 100}};
    panel.consume({test::run_started(4, test::chat_prompt()), e});
    const PrefixTreeView* v = panel.tree_view();
    QCOMPARE(int(v->rows().size()), 3);
    QVERIFY(v->on_path(1) && v->on_path(2) && !v->on_path(3));
    QVERIFY2(v->row_text(0).contains(QStringLiteral("6 tokens · 600 B · shared by 2 entries · "
                                                    "matched whole")),
             qPrintable(v->row_text(0)));
    QVERIFY2(v->row_text(1).contains(QStringLiteral("entry (slot 1, last use: 1 entries since) · "
                                                    "matched 1 of 2, diverged after")),
             qPrintable(v->row_text(1)));
    QVERIFY(v->row_text(2).contains(QStringLiteral("most recently used")));
    QVERIFY2(panel.tree_notice().contains(QStringLiteral("holds 2 entries, 14 tokens")),
             qPrintable(panel.tree_notice()));
    QVERIFY(panel.tree_notice().contains(QStringLiteral("for 7 tokens; 1 entries were evicted")));
    QVERIFY(v->height() >= 3 * v->fontMetrics().height());
}

void PromptCachePanelTest::divergence_names_both_tokens() {
    PromptCachePanel panel;
    PrefixCacheEvent e = test::prefix(1, 14, 5);
    e.source = "prefix_cache";
    e.diverge_at = 5;
    e.diverge_cached_token = 99;
    e.diverge_cached_piece = "Monday";
    panel.consume({test::run_started(1, test::chat_prompt()), e});
    QVERIFY2(panel.summary().contains(QStringLiteral("where the cache held “Monday”")),
             qPrintable(panel.summary()));
    QVERIFY(panel.summary().contains(QStringLiteral("another conversation")));
    const QString cell = panel.request_model()
                             ->data(panel.request_model()->index(0, PromptCacheModel::Diverging))
                             .toString();
    QVERIFY2(cell.contains(QStringLiteral("≠ cached “Monday”")), qPrintable(cell));
    // A match that ended where nothing cached continued is new content, not a divergence.
    PrefixCacheEvent n = test::prefix(2, 14, 5);
    panel.consume({test::run_started(2, test::chat_prompt()), n});
    QVERIFY2(panel.summary().contains(QStringLiteral("past everything cached")),
             qPrintable(panel.summary()));
}

void PromptCachePanelTest::reset_forgets_everything() {
    PromptCachePanel panel;
    QAbstractItemModelTester tester(panel.request_model(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    panel.consume({test::run_started(1, test::chat_prompt()), test::prefix(1, 14, 10)});
    panel.reset();
    QCOMPARE(panel.request_model()->rowCount(), 0);
    QVERIFY(panel.notice().startsWith(QStringLiteral("No requests yet")));
    QCOMPARE(panel.shown_request(), -1);
}

QTEST_MAIN(PromptCachePanelTest)
#include "prompt_cache_panel_test.moc"
