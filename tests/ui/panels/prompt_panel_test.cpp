// The prompt inspector: the latest run's prompt tokens with ids and texts, the template's special
// tokens marked (and said to be unknown for a stored run), how the prompt was rendered, and the
// text view with each token's text escaped and specials highlighted.
#include <QAbstractItemModelTester>
#include <QTest>

#include "panels/prompt_panel.h"
#include "synthetic_events.h"

using namespace fluoro;
using namespace fluoro::ui;

namespace {

RunStarted live_run(uint64_t run) {
    RunStarted r = test::run_started(run, test::chat_prompt());
    r.prompt_special.assign(r.prompt_pieces.size(), 0);
    for (size_t i = 0; i < r.prompt_pieces.size(); ++i)
        r.prompt_special[i] = r.prompt_pieces[i].starts_with("<|");
    return r;
}

RunStarted rendered_by(RunStarted r, const std::string& tmpl, const std::string& note) {
    r.chat_template = tmpl;
    r.chat_template_note = note;
    return r;
}

}  // namespace

class PromptPanelTest : public QObject {
    Q_OBJECT
  private slots:
    void honest_before_any_run();
    void lists_tokens_and_marks_specials();
    void stored_run_says_specials_unknown();
    void names_a_fallback_template_and_forgets_it_on_reset();
    void text_view_escapes_and_highlights();
};

void PromptPanelTest::honest_before_any_run() {
    PromptPanel panel;
    QVERIFY(panel.headline().startsWith(QStringLiteral("No prompt yet")));
    QCOMPARE(panel.token_model()->rowCount(), 0);
}

void PromptPanelTest::lists_tokens_and_marks_specials() {
    PromptPanel panel;
    QAbstractItemModelTester tester(panel.token_model(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    panel.consume({rendered_by(live_run(4), "jinja", "")});
    PromptTokenModel* m = panel.token_model();
    QCOMPARE(m->rowCount(), 14);
    QCOMPARE(m->index(0, PromptTokenModel::Id).data().toInt(), 100);
    QCOMPARE(m->index(0, PromptTokenModel::Kind).data().toString(), QStringLiteral("special"));
    QVERIFY(m->index(0, PromptTokenModel::Kind).data(Qt::UserRole).toBool());
    QVERIFY(!m->index(3, PromptTokenModel::Kind).data(Qt::UserRole).toBool());
    QCOMPARE(m->index(3, PromptTokenModel::Token).data().toString(), QStringLiteral("Why"));
    QVERIFY(m->index(9, PromptTokenModel::Kind).data(Qt::BackgroundRole).isValid());
    QVERIFY(!m->index(3, PromptTokenModel::Kind).data(Qt::BackgroundRole).isValid());
    QVERIFY2(panel.headline().contains(QStringLiteral("Run 4 · 14 tokens · rendered by the "
                                                      "model's own chat template")),
             qPrintable(panel.headline()));
    QVERIFY(panel.headline().contains(QStringLiteral("special tokens highlighted")));
}

void PromptPanelTest::stored_run_says_specials_unknown() {
    PromptPanel panel;
    panel.consume({test::run_started(5, test::chat_prompt())});  // no prompt_special
    QCOMPARE(panel.token_model()->index(0, PromptTokenModel::Kind).data().toString(),
             QStringLiteral("?"));
    QVERIFY(panel.headline().contains(QStringLiteral("not recorded for stored runs")));
}

void PromptPanelTest::names_a_fallback_template_and_forgets_it_on_reset() {
    PromptPanel panel;
    panel.consume({rendered_by(live_run(6), "gemma",
                               "no chat template in the file; using the gemma format")});
    QVERIFY2(panel.headline().contains(QStringLiteral("the built-in gemma format — no chat "
                                                      "template in the file")),
             qPrintable(panel.headline()));
    panel.reset();
    QCOMPARE(panel.token_model()->rowCount(), 0);
    QVERIFY(panel.headline().startsWith(QStringLiteral("No prompt yet")));
    panel.consume({live_run(7)});  // a stored run: nothing said about the template
    QVERIFY(!panel.headline().contains(QStringLiteral("rendered by")));
}

void PromptPanelTest::text_view_escapes_and_highlights() {
    PromptPanel panel;
    RunStarted r = live_run(8);
    // (sized constructors: GCC 12 misreports assigning short literals here, -Wrestrict)
    r.prompt_pieces[3] = std::string("<b>&", 4);         // HTML in a user's text stays text
    r.prompt_pieces[4] = std::string("\x01", 1);         // a control byte
    r.prompt_pieces[5] = std::string("caf\xc3\xa9", 5);  // UTF-8
    panel.consume({r});
    const QString html = panel.prompt_text_html();
    QVERIFY(html.contains(QStringLiteral("&lt;b&gt;&amp;")));
    QVERIFY(html.contains(QStringLiteral("\\x01")));
    QVERIFY(html.contains(QStringLiteral("café")));
    QVERIFY(html.contains(QStringLiteral("↵<br>")));
    QVERIFY(html.contains(QStringLiteral("font-weight: bold;'>&lt;|im_start|&gt;</span>")));
    QVERIFY(html.contains(QStringLiteral("title='#3 · id 103'")));
}

QTEST_MAIN(PromptPanelTest)
#include "prompt_panel_test.moc"
