// ChatView and a reply with reasoning: the engine's split tokens stream into a reasoning block
// shown while the model thinks, collapsed under "Thought for N tokens · X s" once the answer
// starts, expandable by clicking its header; the statistics line counts the reasoning tokens.
#include <QSignalSpy>
#include <QTest>
#include <QUrl>

#include "workbench/chat_view.h"

using namespace fluoro;
using namespace fluoro::ui;

namespace {

TokenEvent token(int64_t index, bool reasoning, std::string r, std::string a, int64_t t_ns) {
    TokenEvent t;
    t.run = 5;
    t.index = index;
    t.id = int32_t(100 + index);
    t.piece = r + a;
    t.split = true;
    t.reasoning = reasoning;
    t.reasoning_text = std::move(r);
    t.answer_text = std::move(a);
    t.t_ns = t_ns;
    return t;
}

}  // namespace

class ChatViewTest : public QObject {
    Q_OBJECT
  private slots:
    void reasoning_streams_then_collapses_and_expands_on_click() {
        ChatView view;
        view.resize(600, 400);
        RunStarted s;
        s.run = 5;
        s.user_text = "What is 2+2?";
        s.prompt_tokens = 9;
        view.consume({s, token(0, true, "Two plus", "", 100'000'000),
                      token(1, true, " two.", "", 200'000'000)});
        // Only reasoning so far: shown, under a "thinking" header.
        QString text = view.toPlainText();
        QVERIFY2(text.contains("Two plus two."), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Thinking\u2026 2 tokens")), qPrintable(text));

        // The token that closes the block (only a marker: no text), then the answer.
        view.consume({token(2, true, "", "", 1'500'000'000),
                      token(3, false, "", "\n\nFour.", 1'600'000'000)});
        text = view.toPlainText();
        QVERIFY2(text.contains("Four."), qPrintable(text));
        QVERIFY2(!text.contains("Two plus two."), qPrintable(text));  // collapsed
        // The answer's leading blank lines are not shown: it follows the header directly.
        QVERIFY2(text.contains(QStringLiteral("1.5 s\nFour.")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("Thought for 3 tokens \u00B7 1.5 s")),
                 qPrintable(text));

        RunFinished f;
        f.run = 5;
        f.stop = "eog";
        f.n_tokens = 4;
        f.prompt_tokens = 9;
        f.reasoning_tokens = 3;
        f.reasoning_ns = 1'500'000'000;
        view.consume({f});
        text = view.toPlainText();
        QVERIFY2(text.contains(QStringLiteral("4 tokens \u00B7 3 reasoning")), qPrintable(text));
        QCOMPARE(view.messages().back().text(), std::string("\n\nFour."));
        QCOMPARE(view.messages().back().reasoning(), std::string("Two plus two."));

        // A click on the header opens the block, another closes it.
        emit view.anchorClicked(QUrl("think:5"));
        text = view.toPlainText();
        QVERIFY2(text.contains("Two plus two."), qPrintable(text));
        QVERIFY(text.indexOf("Two plus two.") < text.indexOf("Four."));  // above the answer
        emit view.anchorClicked(QUrl("think:5"));
        QVERIFY(!view.toPlainText().contains("Two plus two."));
    }

    void a_reply_without_reasoning_has_no_block() {
        ChatView view;
        RunStarted s;
        s.run = 5;
        s.user_text = "hi";
        RunFinished f;
        f.run = 5;
        f.stop = "eog";
        f.n_tokens = 1;
        view.consume({s, token(0, false, "", "Hello", 10), f});
        const QString text = view.toPlainText();
        QVERIFY(text.contains("Hello"));
        QVERIFY2(!text.contains("Thought"), qPrintable(text));
        QVERIFY2(!text.contains("reasoning"), qPrintable(text));
    }

    void tokens_without_a_split_show_as_generated() {
        ChatView view;
        RunStarted s;
        s.run = 5;
        TokenEvent t;
        t.run = 5;
        t.id = 1;
        t.piece = "<think>raw</think>ok";  // a stored run: no split known
        view.consume({s, t});
        QVERIFY(view.toPlainText().contains("<think>raw</think>ok"));
    }
};

QTEST_MAIN(ChatViewTest)
#include "chat_view_test.moc"
