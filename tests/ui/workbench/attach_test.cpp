// The window attached to a second Fluoroscope's API server (File → Attach to server), on
// SmolLM2: one window loads the model and serves it, the other attaches to its URL and chats.
// The attached window shows the server's greedy reply as the serving window computed it, each
// token with its top-5 alternatives by text and its arrival time, and the server's /metrics in
// the status bar (labelled as the server's); the run is stored (tokens, alternatives' texts,
// the server loads) and exported as JSON like a local one. The same against a third-party server,
// llama-cpp-python's (the version scripts/bench-serve.sh pins; skipped where it is not installed —
// CI never builds it): streamed tokens with top-5 alternatives and their times, stored; it has no
// /metrics, which the window says. A server that is not there is an error banner, and the window
// stays detached.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <QLabel>

#include <QProcess>
#include <QSignalSpy>
#include <QTest>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "store/store.h"
#include "store/store_writer.h"
#include "workbench/chat_view.h"
#include "workbench/engine_bridge.h"
#include "workbench/main_window.h"
#include "workbench/serve_controller.h"
#include "workbench_test_support.h"

namespace fluoro::ui {
namespace {

// A port nothing listens on now (bound to 0, read, closed).
int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
        port = ntohs(a.sin_port);
    ::close(fd);
    return port;
}

}  // namespace

class AttachTest : public QObject {
    Q_OBJECT
  private:
    // Every TokenEvent `w` shows from now on lands in `tokens`.
    void collect_tokens(MainWindow& w, std::vector<TokenEvent>& tokens) {
        connect(&w.bridge(), &EngineBridge::events_arrived, this,
                [&tokens](const std::vector<Event>& b) {
                    for (const Event& e : b)
                        if (const auto* t = std::get_if<TokenEvent>(&e)) tokens.push_back(*t);
                });
    }

  private slots:
    void initTestCase() { test::isolate_settings(); }

    void attached_window_shows_stores_and_exports_the_servers_run() {
        FLUORO_REQUIRE_DEFAULT_MODEL(model);
        MainWindow server(WorkbenchOptions{test::scratch("attach-server.db")});
        server.serve_when_loaded(0);
        server.open_model(model);
        QTRY_VERIFY_WITH_TIMEOUT(server.serve().running(), 60000);
        QSignalSpy served(&server, &MainWindow::run_finished);

        const auto db = test::scratch("attach-client.db");
        MainWindow w(WorkbenchOptions{db});
        w.show();
        QSignalSpy finished(&w, &MainWindow::run_finished);
        std::vector<TokenEvent> tokens;
        collect_tokens(w, tokens);
        w.attach_remote(server.serve().url(), QString(), QString(), true);
        QVERIFY(w.bridge().attached());
        QTRY_VERIFY_WITH_TIMEOUT(w.bridge().model().has_value(), 30000);
        QCOMPARE(w.bridge().model()->arch, std::string("remote"));
        SamplingParams greedy;
        greedy.temperature = 0;
        greedy.n_probs = 5;
        w.bridge().submit(ChangeSettings{greedy, 12, std::string()});
        w.send_message(QStringLiteral("What is the capital of France?"));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
        QTRY_COMPARE_WITH_TIMEOUT(served.count(), 1, 10000);

        // The serving window's reply, token by token with alternatives and times.
        const auto mine = finished.at(0).at(0).value<RunFinished>();
        const auto theirs = served.at(0).at(0).value<RunFinished>();
        QVERIFY2(mine.stop != "error", mine.error.c_str());
        QCOMPARE(mine.text, theirs.text);
        QCOMPARE(mine.n_tokens, theirs.n_tokens);
        QCOMPARE(QString::fromStdString(w.chat()->messages().back().text()),
                 QString::fromStdString(theirs.text));
        QCOMPARE(int64_t(tokens.size()), theirs.n_tokens);
        for (const TokenEvent& t : tokens) {
            QCOMPARE(t.top_text.size(), size_t(5));
            QVERIFY(t.t_ns > 0);
        }
        // The server's load, labelled as the server's.
        const QLabel* load = w.server_load_label();
        QVERIFY(load->isVisibleTo(&w));
        QVERIFY2(load->text().startsWith("server (vllm names): running 0 · waiting 0 · KV cache "),
                 qPrintable(load->text()));
        QVERIFY2(load->text().contains("tokens hit (this run +"), qPrintable(load->text()));

        // Stored like a local run.
        w.bridge().writer()->flush();
        {
            app::Store store(db);
            const auto list = store.list_conversations();
            QCOMPARE(list.size(), size_t(1));
            app::ConversationRecord c = store.load_conversation(list[0].id);
            QCOMPARE(c.runs.size(), size_t(1));
            QCOMPARE(c.runs[0].model_path, server.serve().url().toStdString());
            QCOMPARE(c.runs[0].tokens.size(), tokens.size());
            QVERIFY(c.runs[0].tokens[0].top_text == tokens[0].top_text);
            QCOMPARE(c.runs[0].server_loads.size(), size_t(2));
        }
        // Exported like one.
        const QString out = QString::fromStdString(test::scratch("attach.json").string());
        QSignalSpy exported(&w, &MainWindow::exported);
        w.export_to("json", out);
        QTRY_COMPARE_WITH_TIMEOUT(exported.count(), 1, 10000);
        QVERIFY(exported.at(0).at(1).toBool());
        std::ifstream in(out.toStdString());
        std::stringstream text;
        text << in.rdbuf();
        const auto j = nlohmann::json::parse(text.str());
        const auto& run = j["runs"][0];
        QCOMPARE(run["server_loads"].size(), size_t(2));
        QCOMPARE(run["tokens"][0]["top_text"].size(), size_t(5));
    }

    void attached_to_llama_cpp_pythons_server() {
        FLUORO_REQUIRE_DEFAULT_MODEL(model);
        if (QProcess::execute("python3", {"-c", "import llama_cpp.server.app"}) != 0)
            QSKIP(
                "llama-cpp-python's server is not installed (pip install "
                "'llama-cpp-python[server]')");
        const int port = free_port();
        QVERIFY(port > 0);
        QProcess peer;
        peer.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        peer.start("python3",
                   {"-m", "llama_cpp.server", "--model", model, "--host", "127.0.0.1", "--port",
                    QString::number(port), "--n_threads", "1", "--model_alias", "smollm2"});
        QVERIFY(peer.waitForStarted());
        const auto db = test::scratch("attach-peer.db");
        MainWindow w(WorkbenchOptions{db});
        w.show();
        QSignalSpy finished(&w, &MainWindow::run_finished);
        std::vector<TokenEvent> tokens;
        collect_tokens(w, tokens);
        // Its model load takes seconds: attach until it answers.
        const QString url = QStringLiteral("http://127.0.0.1:%1/v1").arg(port);
        for (int i = 0; i < 120 && !w.bridge().model(); ++i) {
            w.attach_remote(url, QString(), QString(), true);
            QTest::qWait(500);
            QTRY_VERIFY_WITH_TIMEOUT(w.bridge().model() || !w.bridge().attached(), 10000);
        }
        QVERIFY2(w.bridge().model().has_value(), qPrintable(w.error_text()));
        QCOMPARE(w.bridge().model()->name, std::string("smollm2"));
        QTRY_VERIFY2_WITH_TIMEOUT(w.error_text().contains("metrics"), qPrintable(w.error_text()),
                                  10000);  // it has none: said once
        SamplingParams greedy;
        greedy.temperature = 0;
        greedy.n_probs = 5;
        w.bridge().submit(ChangeSettings{greedy, 12, std::string()});
        w.send_message(QStringLiteral("What is the capital of France?"));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 180000);
        const auto f = finished.at(0).at(0).value<RunFinished>();
        QVERIFY2(f.stop != "error", f.error.c_str());
        QVERIFY(!tokens.empty());
        std::string text;
        int64_t prev = 0;
        for (const TokenEvent& t : tokens) {
            text += t.piece;
            QVERIFY(t.t_ns >= prev);
            prev = t.t_ns;
            if (t.id < 0) continue;  // a chunk it sent without logprobs
            QCOMPARE(t.top_text.size(), size_t(5));
            // The alternatives most likely first; the chosen one, when among them, with its
            // own logprob. (Not necessarily the first: its server applies a repeat penalty of
            // 1.1 by default after the logprobs it reports.)
            for (size_t k = 1; k < t.top.size(); ++k)
                QVERIFY(t.top[k].logprob <= t.top[k - 1].logprob);
            for (size_t k = 0; k < t.top.size(); ++k)
                if (t.top_text[k] == t.token_text) QCOMPARE(t.top[k].logprob, t.logprob);
        }
        QCOMPARE(text, f.text);
        QCOMPARE(QString::fromStdString(w.chat()->messages().back().text()),
                 QString::fromStdString(f.text));
        w.bridge().writer()->flush();
        app::Store store(db);
        const auto list = store.list_conversations();
        QCOMPARE(list.size(), size_t(1));
        const app::ConversationRecord c = store.load_conversation(list[0].id);
        QCOMPARE(c.runs.size(), size_t(1));
        QCOMPARE(c.runs[0].tokens.size(), tokens.size());
        QVERIFY(c.runs[0].server_loads.empty());  // no /metrics there
        peer.terminate();
        peer.waitForFinished(10000);
    }

    void a_server_that_is_not_there_is_an_error_and_the_window_detaches() {
        MainWindow w(WorkbenchOptions{});
        // Port 9 (discard) has no HTTP server on a test machine.
        w.attach_remote(QStringLiteral("http://127.0.0.1:9"));
        QTRY_VERIFY_WITH_TIMEOUT(!w.bridge().attached(), 30000);
        QVERIFY2(w.error_text().contains("cannot connect"), qPrintable(w.error_text()));
        w.attach_remote(QStringLiteral("ftp://example.com"));
        QVERIFY2(w.error_text().contains("the scheme must be http or https"),
                 qPrintable(w.error_text()));
        QVERIFY(!w.bridge().attached());
    }
};

}  // namespace fluoro::ui

QTEST_MAIN(fluoro::ui::AttachTest)
#include "attach_test.moc"
