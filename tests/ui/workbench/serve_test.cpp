// The workbench's API server (Server menu, API server dock, --serve) with the real default model:
// a request from an outside client, off the GUI thread, is answered, shows as the live
// conversation in the chat, is listed in the server panel with its token counts, lands in the
// session store, and a repeat of its system prompt comes from the prompt cache. Stopping the
// server while a streamed request generates returns at once (the request's wait on the GUI
// thread's batches is aborted, not deadlocked) and the port is closed after. Your own chat goes
// on after a request (at once with "Back to your chat"; a message sent just after a request was
// queued goes to your chat, not the request's). A port that is taken and a missing model are
// reported, and the server stays off. With parallel slots the requests run at once on a batching
// engine and the Scheduler dock draws every step of them.
#include <httplib.h>

#include <QAction>
#include <QCheckBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTest>
#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "store/store.h"
#include "store/store_writer.h"
#include "workbench/chat_view.h"
#include "workbench/conversation_list_model.h"
#include "workbench/engine_bridge.h"
#include "workbench/main_window.h"
#include "workbench/scheduler_view.h"
#include "workbench/serve_controller.h"
#include "workbench/server_panel.h"
#include "workbench_test_support.h"

using namespace fluoro;
using namespace fluoro::ui;
using nlohmann::json;

namespace {

struct Reply {
    int status = 0;  // 0: no HTTP answer (connection refused or closed)
    std::string body;
};

// POSTs on a thread of its own: the GUI thread must keep delivering the engine's events.
std::future<Reply> post(int port, json body) {
    return std::async(std::launch::async, [port, body] {
        httplib::Client c("127.0.0.1", port);
        c.set_read_timeout(180, 0);
        const auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
        return r ? Reply{r->status, r->body} : Reply{};
    });
}

bool ready(std::future<Reply>& f) {
    return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

json request(const std::string& user, int max_tokens, bool stream = false) {
    json j{{"model", "SmolLM2"},
           {"messages",
            {{{"role", "system"},
              {"content", "You are a helpful assistant who answers in one short sentence."}},
             {{"role", "user"}, {"content", user}}}},
           {"max_tokens", max_tokens},
           {"temperature", 0}};
    if (stream) j["stream"] = true;
    return j;
}

// Greedy replies of at most 8 tokens from now on; every RunStarted of `w` lands in `starts`.
void greedy_collecting_starts(QObject* owner, MainWindow& w, std::vector<RunStarted>& starts) {
    SamplingParams greedy;
    greedy.temperature = 0;
    w.bridge().submit(ChangeSettings{greedy, 8, std::nullopt});
    QObject::connect(&w.bridge(), &EngineBridge::events_arrived, owner,
                     [&starts](const std::vector<Event>& b) {
                         for (const Event& e : b)
                             if (const auto* s = std::get_if<RunStarted>(&e)) starts.push_back(*s);
                     });
}

}  // namespace

class ServeTest : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() { test::isolate_settings(); }

    void outside_requests_show_live_are_listed_stored_and_cached() {
        FLUORO_REQUIRE_DEFAULT_MODEL(model);
        const auto db = test::scratch("serve.db");
        MainWindow w(WorkbenchOptions{db});
        w.show();
        w.serve_when_loaded(0);  // what --serve does: starts once the model is in
        w.open_model(model);
        QTRY_VERIFY_WITH_TIMEOUT(w.serve().running(), 60000);
        const int port = w.serve().port();
        QVERIFY(port > 0);
        QVERIFY(w.findChild<QLabel*>("serve_status")->text().contains(w.serve().url()));
        QVERIFY(w.findChild<QLabel*>("serve_label")->isVisibleTo(&w));
        QVERIFY(w.findChild<QAction*>("action_serve")->isChecked());

        QSignalSpy finished(&w, &MainWindow::run_finished);
        auto first = post(port, request("What is the capital of France?", 16));
        QTRY_VERIFY_WITH_TIMEOUT(ready(first), 120000);
        const Reply r1 = first.get();
        QCOMPARE(r1.status, 200);
        const json j1 = json::parse(r1.body);
        const std::string content = j1["choices"][0]["message"]["content"];
        QVERIFY(!content.empty());

        // Shown as the live conversation, like a chat turn.
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 10000);
        const auto& msgs = w.chat()->messages();
        QCOMPARE(msgs.size(), size_t(2));
        QCOMPARE(QString::fromStdString(msgs[0].text()),
                 QStringLiteral("What is the capital of France?"));
        QCOMPARE(QString::fromStdString(msgs[1].text()), QString::fromStdString(content));

        // Listed in the server panel.
        QTRY_COMPARE_WITH_TIMEOUT(w.server_panel()->requests_listed(), 1, 5000);
        QVERIFY(w.findChild<QLabel*>("serve_totals")->text().startsWith("1 requests (0 failed)"));

        // The same system prompt again: served from the prompt cache.
        auto second = post(port, request("And of Italy?", 8));
        QTRY_VERIFY_WITH_TIMEOUT(ready(second), 120000);
        const Reply r2 = second.get();
        QCOMPARE(r2.status, 200);
        const json j2 = json::parse(r2.body);
        const int64_t cached = j2["usage"]["prompt_tokens_details"]["cached_tokens"];
        QVERIFY2(cached >= 10, qPrintable(QString::number(cached)));
        QTRY_COMPARE_WITH_TIMEOUT(w.server_panel()->requests_listed(), 2, 5000);

        // Stored: both requests, each as its own conversation.
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 10000);
        w.bridge().writer()->flush();
        app::Store store(db);
        const auto list = store.list_conversations();
        QCOMPARE(list.size(), size_t(2));
        bool found = false;
        for (const auto& c : list) {
            const auto conv = store.load_conversation(c.id);
            QCOMPARE(conv.runs.size(), size_t(1));
            if (conv.runs[0].n_tokens == j1["usage"]["completion_tokens"].get<int64_t>() &&
                conv.messages.size() == 2 && conv.messages[1].content == content)
                found = true;
        }
        QVERIFY(found);

        // Stopping while a streamed request generates: no deadlock, the client is let go.
        auto streamed = post(port, request("Count from 1 to 200, one number per line.", 400, true));
        QTRY_VERIFY_WITH_TIMEOUT(w.bridge().generating() && w.chat()->tokens_received() > 0, 60000);
        QVERIFY(!ready(streamed));
        w.findChild<QAction*>("action_serve")->trigger();  // as the Server menu does
        QVERIFY(!w.serve().running());
        QVERIFY(!w.findChild<QAction*>("action_serve")->isChecked());
        QVERIFY(!w.findChild<QLabel*>("serve_label")->isVisibleTo(&w));
        QVERIFY(w.findChild<QLabel*>("serve_status")->text().startsWith("Stopped"));
        QTRY_VERIFY_WITH_TIMEOUT(ready(streamed), 10000);
        QTRY_VERIFY_WITH_TIMEOUT(!w.bridge().generating(), 10000);
        httplib::Client gone("127.0.0.1", port);
        QVERIFY(!gone.Get("/v1/models"));  // nobody listens any more
    }

    // A request does not take your chat over: it shows live and stays on screen, then your next
    // message goes to your own conversation (same engine id, same stored conversation).
    void your_chat_goes_on_after_an_outside_request() {
        FLUORO_REQUIRE_DEFAULT_MODEL(model);
        const auto db = test::scratch("serve-resume.db");
        MainWindow w(WorkbenchOptions{db});
        w.show();
        w.serve_when_loaded(0);
        w.open_model(model);
        QTRY_VERIFY_WITH_TIMEOUT(w.serve().running(), 60000);
        std::vector<RunStarted> starts;
        greedy_collecting_starts(this, w, starts);
        QSignalSpy finished(&w, &MainWindow::run_finished);

        w.send_message("Name a color.");
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        auto outside = post(w.serve().port(), request("What is the capital of France?", 8));
        QTRY_VERIFY_WITH_TIMEOUT(ready(outside), 120000);
        QCOMPARE(outside.get().status, 200);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 10000);
        QCOMPARE(w.chat()->messages().size(), size_t(2));  // the request, on screen
        QCOMPARE(QString::fromStdString(w.chat()->messages()[0].text()),
                 QStringLiteral("What is the capital of France?"));
        QVERIFY(w.findChild<QWidget*>("outside_bar")->isVisibleTo(&w));

        w.send_message("And another one?");
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 3, 60000);
        QCOMPARE(starts.size(), size_t(3));
        QCOMPARE(starts[2].conversation, starts[0].conversation);
        QCOMPARE(starts[2].kept_messages, int64_t(2));
        const auto& msgs = w.chat()->messages();
        QCOMPARE(msgs.size(), size_t(4));
        QCOMPARE(QString::fromStdString(msgs[0].text()), QStringLiteral("Name a color."));
        QCOMPARE(QString::fromStdString(msgs[2].text()), QStringLiteral("And another one?"));

        w.bridge().writer()->flush();
        app::Store store(db);
        QCOMPARE(store.list_conversations().size(), size_t(2));  // yours, and the request
        bool yours = false;
        for (const auto& c : store.list_conversations()) {
            const auto conv = store.load_conversation(c.id);
            if (conv.runs.size() == 2 && conv.messages.size() == 4 &&
                conv.messages[2].content == "And another one?")
                yours = true;
        }
        QVERIFY(yours);
    }

    // "Back to your chat" brings your conversation back on screen at once, without sending;
    // your next message goes on with it.
    void back_to_your_chat_shows_it_without_sending() {
        FLUORO_REQUIRE_DEFAULT_MODEL(model);
        MainWindow w(WorkbenchOptions{test::scratch("serve-back.db")});
        w.show();
        w.serve_when_loaded(0);
        w.open_model(model);
        QTRY_VERIFY_WITH_TIMEOUT(w.serve().running(), 60000);
        std::vector<RunStarted> starts;
        greedy_collecting_starts(this, w, starts);
        QSignalSpy finished(&w, &MainWindow::run_finished);
        auto* bar = w.findChild<QWidget*>("outside_bar");
        w.send_message("Name a color.");
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QVERIFY(!bar->isVisibleTo(&w));
        auto outside = post(w.serve().port(), request("What is the capital of France?", 8));
        QTRY_VERIFY_WITH_TIMEOUT(ready(outside), 120000);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 10000);
        QTRY_VERIFY_WITH_TIMEOUT(bar->isVisibleTo(&w), 5000);

        w.findChild<QPushButton*>("back_to_chat")->click();
        QVERIFY(!bar->isVisibleTo(&w));
        const auto first_text = [&] {
            const auto& m = w.chat()->messages();
            return m.empty() ? QString() : QString::fromStdString(m[0].text());
        };
        QTRY_COMPARE_WITH_TIMEOUT(first_text(), QStringLiteral("Name a color."), 5000);
        QCOMPARE(w.chat()->messages().size(), size_t(2));
        QCOMPARE(finished.count(), 2);  // nothing was sent

        w.send_message("And another one?");
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 3, 60000);
        QCOMPARE(starts.size(), size_t(3));
        QCOMPARE(starts[2].conversation, starts[0].conversation);
        QCOMPARE(starts[2].kept_messages, int64_t(2));
    }

    // A request queued before your message, but not yet seen by the window when you send: the
    // engine refuses the message for the request's conversation and the window sends it again
    // to yours, without an error on screen.
    void a_request_queued_just_before_your_message_does_not_get_it() {
        FLUORO_REQUIRE_DEFAULT_MODEL(model);
        MainWindow w(WorkbenchOptions{test::scratch("serve-race.db")});
        w.show();
        w.open_model(model);
        QTRY_VERIFY_WITH_TIMEOUT(w.bridge().model().has_value(), 60000);
        std::vector<RunStarted> starts;
        greedy_collecting_starts(this, w, starts);
        QSignalSpy finished(&w, &MainWindow::run_finished);
        w.send_message("Name a color.");
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);

        // What the server does for a request, then the user's send in the same event-loop turn.
        w.bridge().submit(Complete{{{"user", "What is the capital of France?"}}});
        w.send_message("And another one?");
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 3, 60000);
        QCOMPARE(starts.size(), size_t(3));
        QVERIFY(starts[1].conversation != starts[0].conversation);  // the request's
        QCOMPARE(starts[1].kept_messages, int64_t(0));
        QCOMPARE(starts[2].conversation, starts[0].conversation);
        QCOMPARE(starts[2].kept_messages, int64_t(2));
        QCOMPARE(starts[2].user_text, std::string("And another one?"));
        QVERIFY2(w.error_text().isEmpty(), qPrintable(w.error_text()));
        QCOMPARE(w.chat()->messages().size(), size_t(4));
    }

    void a_taken_port_or_no_model_is_reported_and_the_server_stays_off() {
        MainWindow w(WorkbenchOptions{test::scratch("serve-errors.db")});
        QVERIFY(w.server_panel()->set_serving(true).contains("load a model first"));
        QVERIFY(!w.serve().running());

        FLUORO_REQUIRE_DEFAULT_MODEL(model);
        w.open_model(model);
        QTRY_VERIFY_WITH_TIMEOUT(w.bridge().model().has_value(), 60000);
        httplib::Server squatter;
        const int port = squatter.bind_to_any_port("127.0.0.1");
        QVERIFY(port > 0);
        w.server_panel()->set_port(port);
        const QString err = w.server_panel()->set_serving(true);
        QVERIFY2(err.contains("cannot listen"), qPrintable(err));
        QVERIFY(!w.serve().running());
        QVERIFY(!w.findChild<QPushButton*>("serve_toggle")->isChecked());
        QVERIFY(w.findChild<QLabel*>("serve_status")->text().contains("cannot listen"));

        // Public without a key: refused before it listens (anyone on the network could use the
        // engine); with a key it listens.
        w.server_panel()->set_port(0);
        w.findChild<QCheckBox*>("serve_public")->setChecked(true);
        w.findChild<QLineEdit*>("serve_key")->setText("  ");
        const QString no_key = w.server_panel()->set_serving(true);
        QVERIFY2(no_key.contains("needs an API key"), qPrintable(no_key));
        QVERIFY(!w.serve().running());
        w.findChild<QLineEdit*>("serve_key")->setText("sekrit");
        QCOMPARE(w.server_panel()->set_serving(true), QString());
        QVERIFY(w.serve().running());
        w.server_panel()->set_serving(false);
    }

    // Last: it leaves "Parallel slots" at 2 in this process' settings.
    void parallel_slots_draw_the_batch_in_the_scheduler() {
        FLUORO_REQUIRE_DEFAULT_MODEL(model);
        const auto db = test::scratch("serve-parallel.db");
        MainWindow w(WorkbenchOptions{db});
        w.show();
        w.open_model(model);
        QTRY_VERIFY_WITH_TIMEOUT(w.bridge().model().has_value(), 60000);
        w.server_panel()->set_port(0);
        w.findChild<QCheckBox*>("serve_public")->setChecked(false);  // the test before left it on
        w.server_panel()->set_parallel(2);
        QCOMPARE(w.server_panel()->set_serving(true), QString());
        QVERIFY(w.serve().schedule() != nullptr);
        QVERIFY(w.findChild<QLabel*>("serve_status")->text().contains("2 slots"));
        const int port = w.serve().port();
        std::vector<std::future<Reply>> replies;
        for (const char* q : {"What is the capital of France?", "Name a color.", "Count to three."})
            replies.push_back(post(port, request(q, 16)));
        for (auto& r : replies) QTRY_VERIFY_WITH_TIMEOUT(ready(r), 120000);
        // The tokens the steps computed: every prompt token not found cached, and every generated
        // token that was fed back to get the next one — all of them when the reply ended on its
        // end-of-generation token (not counted), all but the last when it reached max_tokens.
        int64_t fed = 0;
        std::set<std::string> answers;
        for (auto& f : replies) {
            const Reply r = f.get();
            QCOMPARE(r.status, 200);
            const json j = json::parse(r.body);
            answers.insert(j["choices"][0]["message"]["content"].get<std::string>());
            const json& u = j["usage"];
            fed += u["prompt_tokens"].get<int64_t>() -
                   u["prompt_tokens_details"]["cached_tokens"].get<int64_t>() +
                   u["completion_tokens"].get<int64_t>() -
                   (j["choices"][0]["finish_reason"] == "length" ? 1 : 0);
        }
        SchedulerView* view = w.scheduler();
        const auto drawn = [view] {
            int64_t tokens = 0;
            for (const auto& st : view->steps())
                for (const auto& p : st.parts) tokens += p.tokens;
            return tokens;
        };
        QTRY_COMPARE_WITH_TIMEOUT(drawn(), fed, 5000);
        QCOMPARE(view->n_slots(), int64_t(2));
        // The server panel lists each request with the run number the scheduler labels.
        QTRY_COMPARE_WITH_TIMEOUT(w.server_panel()->requests_listed(), 3, 5000);
        std::set<QString> listed;
        const auto* log = w.findChild<QTableWidget*>("serve_log");
        for (int row = 0; row < 3; ++row)
            listed.insert(log->item(row, log->columnCount() - 1)->text());
        std::set<uint64_t> requests;
        bool together = false;
        for (const auto& st : view->steps()) {
            std::set<int64_t> used;
            for (const auto& p : st.parts) {
                QVERIFY(p.slot == 0 || p.slot == 1);
                used.insert(p.slot);
                requests.insert(p.request);
            }
            QCOMPARE(used.size(), st.parts.size());  // one part per slot in a step
            together = together || st.parts.size() == 2;
        }
        QCOMPARE(requests.size(), size_t(3));
        std::set<QString> drawn_runs;
        for (const uint64_t r : requests) drawn_runs.insert(QStringLiteral("#%1").arg(r));
        QVERIFY(listed == drawn_runs);
        QVERIFY(together);  // two requests shared a forward at least once
        // The requests ran on the batch engine, not in the window's chat; each is stored as a
        // conversation of its own, with its system prompt, question and reply, and listed.
        QCOMPARE(w.chat()->messages().size(), size_t(0));
        QTRY_COMPARE_WITH_TIMEOUT(w.conversations()->rowCount(), 3, 10000);
        w.bridge().writer()->flush();
        {
            app::Store store(db);
            const auto list = store.list_conversations();
            QCOMPARE(list.size(), size_t(3));
            for (const auto& summary : list) {
                const app::ConversationRecord c = store.load_conversation(summary.id);
                QCOMPARE(c.system_prompt,
                         std::string("You are a helpful assistant who answers in one short "
                                     "sentence."));
                QCOMPARE(c.messages.size(), size_t(2));
                QCOMPARE(c.runs.size(), size_t(1));
                QVERIFY(c.runs[0].stop_reason.has_value());
                QVERIFY2(answers.count(c.messages[1].content) == 1, c.messages[1].content.c_str());
            }
        }
        // Drawn: every box answers its tooltip.
        view->resize(800, 300);
        (void)view->grab();
        std::pair<int, int> found{-1, -1};
        for (int y = 0; y < view->height() && found.first < 0; y += 4)
            for (int x = view->width() - 1; x >= 0 && found.first < 0; x -= 2)
                found = view->hit(QPoint(x, y));
        QVERIFY(found.first >= 0);
        QVERIFY(view->describe(found.first, found.second).startsWith("request (run "));
        w.server_panel()->set_serving(false);
        QVERIFY(w.serve().schedule() == nullptr);
    }
};

QTEST_MAIN(ServeTest)
#include "serve_test.moc"
