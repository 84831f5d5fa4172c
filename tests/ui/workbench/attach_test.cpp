// The window attached to a second Fluoroscope's API server (File → Attach to server), on
// SmolLM2: one window loads the model and serves it, the other attaches to its URL and chats.
// The attached window shows the server's greedy reply as the serving window computed it, each
// token with its top-5 alternatives by text and its arrival time, and the server's /metrics in
// the status bar (labelled as the server's); the run is stored (tokens, alternatives' texts,
// the server loads) and exported as JSON like a local one. A server that is not there is an
// error banner, and the window stays detached.
#include <QLabel>
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

class AttachTest : public QObject {
    Q_OBJECT
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
        connect(&w.bridge(), &EngineBridge::events_arrived, this,
                [&tokens](const std::vector<Event>& b) {
                    for (const Event& e : b)
                        if (const auto* t = std::get_if<TokenEvent>(&e)) tokens.push_back(*t);
                });
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

    void a_server_that_is_not_there_is_an_error_and_the_window_detaches() {
        MainWindow w(WorkbenchOptions{});
        // Port 9 (discard) has no HTTP server on a test machine.
        w.attach_remote(QStringLiteral("http://127.0.0.1:9"));
        QTRY_VERIFY_WITH_TIMEOUT(!w.bridge().attached(), 30000);
        QVERIFY2(w.error_text().contains("cannot connect"), qPrintable(w.error_text()));
        w.attach_remote(QStringLiteral("https://example.com"));
        QVERIFY2(w.error_text().contains("https is not supported"), qPrintable(w.error_text()));
        QVERIFY(!w.bridge().attached());
    }
};

}  // namespace fluoro::ui

QTEST_MAIN(fluoro::ui::AttachTest)
#include "attach_test.moc"
