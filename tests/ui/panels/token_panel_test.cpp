#include <QAbstractItemModelTester>
#include <QTableView>
#include <QTest>

#include "panels/token_panel.h"
#include "synthetic_events.h"

using namespace fluoro;
using namespace fluoro::ui;

class TokenPanelTest : public QObject {
    Q_OBJECT
  private slots:
    void lists_generated_tokens();
    void select_token_shows_alternatives_without_echo();
    void picking_a_row_emits_token_selected();
    void selection_of_a_token_not_yet_arrived_waits();
    void honest_about_missing_probabilities();
    void reset_and_new_run_clear_the_list();
};

void TokenPanelTest::lists_generated_tokens() {
    TokenPanel panel;
    QAbstractItemModelTester tester(panel.token_model(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    panel.consume(test::synthetic_run(7, 6));
    TokenListModel* m = panel.token_model();
    QCOMPARE(m->rowCount(), 6);
    QCOMPARE(m->index(1, TokenListModel::Token).data().toString(), QStringLiteral("·sky"));
    QVERIFY(qAbs(m->index(0, TokenListModel::Probability).data(Qt::UserRole).toDouble() - 0.6) <
            1e-6);
    QCOMPARE(m->index(0, TokenListModel::Probability).data().toString(), QStringLiteral("0.6000"));
    QCOMPARE(panel.selected_index(), int64_t(-1));
}

void TokenPanelTest::select_token_shows_alternatives_without_echo() {
    TokenPanel panel;
    QAbstractItemModelTester tester(panel.alternatives_model(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    int echoes = 0;
    connect(&panel, &EventPanel::token_selected, &panel, [&](quint64, qint64) { ++echoes; });
    panel.consume(test::synthetic_run(7, 6));
    panel.select_token(7, 2);
    QCOMPARE(panel.selected_index(), int64_t(2));
    QCOMPARE(echoes, 0);  // a pick from elsewhere is not sent back
    TokenAlternativesModel* alt = panel.alternatives_model();
    QCOMPARE(alt->rowCount(), 3);
    QCOMPARE(alt->chosen_id(), 202);
    QVERIFY(alt->index(0, TokenAlternativesModel::Chosen).data(Qt::UserRole).toBool());
    QVERIFY(!alt->index(1, TokenAlternativesModel::Chosen).data(Qt::UserRole).toBool());
    QCOMPARE(alt->index(0, TokenAlternativesModel::Token).data().toString(),
             QStringLiteral("·looks"));
    QCOMPARE(alt->index(1, TokenAlternativesModel::Token).data().toString(),
             QStringLiteral("#302"));
    QVERIFY(qAbs(alt->index(1, TokenAlternativesModel::Probability).data(Qt::UserRole).toDouble() -
                 0.2) < 1e-6);
    QVERIFY2(panel.detail().contains(QStringLiteral("p = 0.5000")), qPrintable(panel.detail()));
    QVERIFY(panel.detail().contains(QStringLiteral("rank 1 of the top 3")));
    panel.select_token(99, 3);  // another run: ignored
    QCOMPARE(panel.selected_index(), int64_t(2));
}

void TokenPanelTest::picking_a_row_emits_token_selected() {
    TokenPanel panel;
    std::vector<std::pair<quint64, qint64>> picks;
    connect(&panel, &EventPanel::token_selected, &panel,
            [&](quint64 run, qint64 index) { picks.emplace_back(run, index); });
    panel.consume(test::synthetic_run(7, 6));
    panel.token_view()->selectRow(4);  // what a click does
    QCOMPARE(picks.size(), size_t(1));
    QCOMPARE(picks[0].first, quint64(7));
    QCOMPARE(picks[0].second, qint64(4));
    QCOMPARE(panel.selected_index(), int64_t(4));
}

void TokenPanelTest::selection_of_a_token_not_yet_arrived_waits() {
    TokenPanel panel;
    panel.consume({test::run_started(3, test::chat_prompt()), test::token(3, 0, 200, "A", 0.9)});
    panel.select_token(3, 1);
    QCOMPARE(panel.selected_index(), int64_t(-1));
    panel.consume({test::token(3, 1, 201, "B", 0.8, {{201, 0.8}, {5, 0.1}})});
    QCOMPARE(panel.selected_index(), int64_t(1));
    QCOMPARE(panel.alternatives_model()->rowCount(), 2);
}

void TokenPanelTest::honest_about_missing_probabilities() {
    TokenPanel panel;
    panel.consume({test::run_started(3, test::chat_prompt()), test::token(3, 0, 200, "A", 0.9),
                   test::token(3, 1, -1, "\xC3", 1.0)});
    panel.select_token(3, 0);
    QVERIFY2(panel.detail().contains(QStringLiteral("no alternatives recorded")),
             qPrintable(panel.detail()));
    panel.select_token(3, 1);
    QVERIFY2(panel.detail().contains(QStringLiteral("flushed")), qPrintable(panel.detail()));
    QCOMPARE(panel.token_model()->index(1, TokenListModel::Probability).data().toString(),
             QStringLiteral("—"));
}

void TokenPanelTest::reset_and_new_run_clear_the_list() {
    TokenPanel panel;
    QAbstractItemModelTester tester(panel.token_model(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    panel.consume(test::synthetic_run(7, 6));
    panel.select_token(7, 1);
    auto next = test::synthetic_run(8, 3);
    panel.consume(next);
    QCOMPARE(panel.token_model()->rowCount(), 3);
    QCOMPARE(panel.selected_index(), int64_t(-1));
    panel.reset();
    QCOMPARE(panel.token_model()->rowCount(), 0);
    QCOMPARE(panel.alternatives_model()->rowCount(), 0);
}

QTEST_MAIN(TokenPanelTest)
#include "token_panel_test.moc"
