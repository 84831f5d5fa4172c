// chat_html: fenced code blocks become shaded monospace blocks (the fences themselves hidden),
// generated tokens become clickable anchors, the selected one is highlighted.
#include <QTest>

#include "workbench/chat_html.h"

using namespace fluoro::ui;

class ChatHtmlTest : public QObject {
    Q_OBJECT
  private slots:
    void code_blocks_and_token_anchors() {
        ChatMessage m;
        m.role = "assistant";
        m.run = 9;
        const char* pieces[] = {"Here",    ":\n``", "`python\n", "print",
                                "(1 < 2)", "\n```", "\nDone"};
        int64_t i = 0;
        for (const char* p : pieces) m.pieces.push_back({p, i++});
        ChatColors c{Qt::black, Qt::gray, Qt::blue, QColor("#f3f3f0"), Qt::yellow, Qt::red};
        ChatRenderOptions opt;
        opt.selected_run = 9;
        opt.selected_token = 3;
        const QString html = chat_html({m}, c, opt);
        QVERIFY2(!html.contains("```"), qPrintable(html));
        QVERIFY(html.contains("font-family:monospace"));
        QVERIFY(html.contains("#f3f3f0"));
        QVERIFY(html.contains("python"));  // the language label
        QVERIFY(html.contains("href=\"tok:9:3\""));
        QVERIFY(html.contains("href=\"tok:9:6\""));
        QVERIFY(html.contains("(1&nbsp;&lt;&nbsp;2)"));  // escaped, spaces kept in code
        QVERIFY(html.contains("background-color:#ffff00"));
    }

    void inline_code_is_monospace_without_backticks() {
        ChatMessage m;
        m.role = "assistant";
        m.run = 1;
        m.pieces = {{"Use `", 0}, {"print", 1}, {"(x)` here", 2}};
        ChatColors c{Qt::black, Qt::gray, Qt::blue, QColor("#f3f3f0"), Qt::yellow, Qt::red};
        const QString html = chat_html({m}, c, {});
        QVERIFY2(!html.contains("`"), qPrintable(html));
        QVERIFY(html.contains("font-family:monospace;background-color:#f3f3f0;\">print</span>"));
        QVERIFY(html.contains(">(x)</span> here"));
    }

    void user_messages_offer_edit_only_when_editable() {
        ChatMessage u;
        u.role = "user";
        u.pieces.push_back({"hi <b>", -1});
        ChatColors c{Qt::black, Qt::gray, Qt::blue, Qt::white, Qt::yellow, Qt::red};
        ChatRenderOptions opt;
        QVERIFY(!chat_html({u}, c, opt).contains("edit:0"));
        opt.editable = true;
        const QString html = chat_html({u}, c, opt);
        QVERIFY(html.contains("edit:0"));
        QVERIFY(html.contains("hi &lt;b&gt;"));
    }
};

QTEST_MAIN(ChatHtmlTest)
#include "chat_html_test.moc"
