// The workbench with the real default model (SmolLM2-135M-Instruct): an end-to-end send — tokens
// stream into the chat, the panels are fed, the run lands in the session store and the
// conversation list — and the event-loop stall check: a 5 ms timer measures the largest gap in the
// GUI event loop during a real generation, which must stay under 50 ms.
#include <QApplication>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableWidget>
#include <QTest>
#include <QThread>
#include <QTimer>

#include <QFile>
#include <map>

#include "panels/event_panel.h"
#include "panels/lens_panel.h"
#include "panels/overview_panel.h"
#include "panels/prefix_tree_view.h"
#include "panels/prompt_cache_panel.h"
#include "store/store.h"
#include "store/store_writer.h"
#include "workbench/chat_view.h"
#include "workbench/conversation_list_model.h"
#include "workbench/engine_bridge.h"
#include "workbench/main_window.h"
#include "workbench/panel_feeder.h"
#include "workbench/run_timeline.h"
#include "workbench/store_worker.h"
#include "workbench_test_support.h"

using namespace fluoro;
using namespace fluoro::ui;

namespace {

void set_max_tokens(MainWindow& w, int64_t n, float temperature = 0.8f) {
    ChangeSettings c;
    SamplingParams sp;
    sp.seed = 1;
    sp.temperature = temperature;
    c.sampling = sp;
    c.max_tokens = n;
    w.bridge().submit(c);
}

}  // namespace

class RealModelTest : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() { test::isolate_settings(); }

    void send_streams_feeds_panels_and_stores_the_run() {
        FLUORO_REQUIRE_DEFAULT_MODEL(model);
        const auto db = test::scratch("e2e.db");
        MainWindow w(WorkbenchOptions{db});
        w.show();
        set_max_tokens(w, 24);
        w.open_model(model);
        QTRY_VERIFY_WITH_TIMEOUT(w.bridge().model().has_value(), 60000);
        QVERIFY2(w.error_text().isEmpty(), qPrintable(w.error_text()));

        QSignalSpy finished(&w, &MainWindow::run_finished);
        int64_t tokens_while_streaming = -1;
        connect(&w.bridge(), &EngineBridge::events_arrived, this, [&](const std::vector<Event>& b) {
            for (const Event& e : b)
                if (std::holds_alternative<TokenEvent>(e) && tokens_while_streaming < 0 &&
                    w.bridge().generating())
                    tokens_while_streaming = w.chat()->tokens_received();
        });
        // Typed and sent with Ctrl+Return, as a user would.
        auto* input = w.findChild<QPlainTextEdit*>("input");
        QVERIFY(input);
        QApplication::setActiveWindow(&w);
        QVERIFY(QTest::qWaitForWindowActive(&w));
        input->setFocus();
        QTest::keyClicks(input, "Name three colors.");
        QTest::keyClick(input, Qt::Key_Return, Qt::ControlModifier);
        QTRY_VERIFY_WITH_TIMEOUT(w.chat()->tokens_received() > 0, 60000);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
        const auto f = finished.at(0).at(0).value<RunFinished>();
        QVERIFY2(f.error.empty(), f.error.c_str());
        QVERIFY(f.n_tokens > 0);
        QVERIFY(tokens_while_streaming >= 0);  // tokens showed before the run ended

        const auto& msgs = w.chat()->messages();
        QCOMPARE(msgs.size(), size_t(2));
        QCOMPARE(QString::fromStdString(msgs[1].text()), QString::fromStdString(f.text));
        QVERIFY(msgs[1].stats.contains("TTFT"));
        QVERIFY(msgs[1].stats.contains(QString("stop: %1").arg(QString::fromStdString(f.stop))));
        QVERIFY(w.panel_events_fed() > 0 || w.panels().empty());
        QVERIFY(!w.timeline()->events().empty());

        w.bridge().writer()->flush();
        app::Store store(db);
        const auto list = store.list_conversations();
        QCOMPARE(list.size(), size_t(1));
        const auto conv = store.load_conversation(list[0].id);
        QCOMPARE(conv.runs.size(), size_t(1));
        QCOMPARE(conv.runs[0].n_tokens, f.n_tokens);
        QCOMPARE(conv.runs[0].stop_reason.value_or(""), f.stop);
        QTRY_COMPARE_WITH_TIMEOUT(w.conversations()->rowCount(), 1, 5000);

        // Scrubbing the finished live run re-feeds the panels.
        const int64_t fed = w.panel_events_fed();
        w.timeline()->scrub_to(10);
        QTRY_VERIFY(w.panels().empty() || w.panel_events_fed() > fed);

        // Every export format, written off the GUI thread.
        QSignalSpy exported(&w, &MainWindow::exported);
        std::map<QString, std::filesystem::path> files;
        for (const QString fmt : {"trace", "csv", "json", "markdown"}) {
            files[fmt] = test::scratch("e2e-export." + fmt);
            w.export_to(fmt, QString::fromStdString(files[fmt].string()));
        }
        QTRY_COMPARE_WITH_TIMEOUT(exported.count(), 4, 10000);
        for (const auto& call : exported) QVERIFY(call.at(1).toBool());
        const auto read = [](const std::filesystem::path& p) {
            QFile file(QString::fromStdString(p.string()));
            return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
        };
        QVERIFY(read(files["trace"]).contains("traceEvents"));
        QVERIFY(read(files["csv"]).startsWith("index,token_id"));
        QVERIFY(read(files["json"]).contains("fluoroscope-conversation"));
        QVERIFY(read(files["markdown"]).contains("Name three colors."));

        // The JSON export imported back (File → Import conversation): a second conversation,
        // shown at once, with the same messages; a file that is not one is named in the banner.
        QSignalSpy shown(&w, &MainWindow::conversation_shown);
        w.import_conversation(QString::fromStdString(files["json"].string()));
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 10000);
        QTRY_COMPARE_WITH_TIMEOUT(w.conversations()->rowCount(), 2, 5000);
        QCOMPARE(w.chat()->messages().size(), size_t(2));
        QCOMPARE(QString::fromStdString(w.chat()->messages()[1].text()),
                 QString::fromStdString(f.text));
        w.import_conversation(QString::fromStdString(files["csv"].string()));
        QTRY_VERIFY_WITH_TIMEOUT(w.error_text().contains("is not valid JSON"), 10000);
        QVERIFY(w.error_text().contains(QString::fromStdString(files["csv"].string())));
        if (!w.panels().empty()) {
            EventPanel* p = w.panels().front();
            const auto png = test::scratch("e2e-panel.png"), svg = test::scratch("e2e-panel.svg");
            QVERIFY(w.export_panel_image_to(p, w.panel_dock(p->panel_id()),
                                            QString::fromStdString(png.string())));
            QVERIFY(w.export_panel_image_to(p, w.panel_dock(p->panel_id()),
                                            QString::fromStdString(svg.string())));
            QVERIFY(read(png).startsWith("\x89PNG"));
            QVERIFY(read(svg).contains("<svg"));
        }
    }

    void stop_regenerate_and_edit_go_through_the_engine() {
        FLUORO_REQUIRE_DEFAULT_MODEL(model);
        MainWindow w(WorkbenchOptions{test::scratch("controls.db")});
        w.show();
        set_max_tokens(w, 400, 0);  // greedy: a long, reproducible count to stop in the middle
        w.open_model(model);
        QTRY_VERIFY_WITH_TIMEOUT(w.bridge().model().has_value(), 60000);
        QSignalSpy finished(&w, &MainWindow::run_finished);
        auto* stop = w.findChild<QPushButton*>("stop");
        auto* regenerate = w.findChild<QPushButton*>("regenerate");
        auto* send = w.findChild<QPushButton*>("send");
        QVERIFY(stop && regenerate && send);

        w.send_message("Write a long essay about the history of the printing press in Europe.");
        QTRY_VERIFY_WITH_TIMEOUT(w.chat()->tokens_received() > 0, 60000);
        QVERIFY2(stop->isEnabled(),
                 qPrintable("the reply ended before Stop: " +
                            QString::fromStdString(w.chat()->messages().back().text())));
        stop->click();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 30000);
        QCOMPARE(finished.at(0).at(0).value<RunFinished>().stop, std::string("cancelled"));
        QVERIFY(w.chat()->messages().back().stats.contains("stop: cancelled"));

        set_max_tokens(w, 8);
        QTRY_VERIFY(regenerate->isEnabled());
        regenerate->click();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 60000);
        QCOMPARE(w.chat()->messages().size(), size_t(2));  // the reply was replaced, not added
        QCOMPARE(QString::fromStdString(w.chat()->messages()[1].text()),
                 QString::fromStdString(finished.at(1).at(0).value<RunFinished>().text));

        emit w.chat()->edit_requested(0, "Say hello.");  // the "edit" link of message 0
        QCOMPARE(send->text(), QString("Resend"));
        send->click();
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 3, 60000);
        QCOMPARE(w.chat()->messages().size(), size_t(2));
        QCOMPARE(QString::fromStdString(w.chat()->messages()[0].text()), QString("Say hello."));
        QCOMPARE(send->text(), QString("Send"));
    }

    // A stored conversation on screen: sending continues it from the run picked, as a new live
    // conversation holding that run's turns (shown, and stored with them).
    void sending_on_a_stored_conversation_continues_it() {
        FLUORO_REQUIRE_DEFAULT_MODEL(model);
        const auto db = test::scratch("continue.db");
        MainWindow w(WorkbenchOptions{db});
        w.show();
        set_max_tokens(w, 8, 0);
        w.open_model(model);
        QTRY_VERIFY_WITH_TIMEOUT(w.bridge().model().has_value(), 60000);
        QSignalSpy finished(&w, &MainWindow::run_finished);
        w.send_message("Name three colors.");
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        const std::string first_reply = finished.at(0).at(0).value<RunFinished>().text;
        auto* new_chat = w.findChild<QPushButton*>("new_chat");
        QVERIFY(new_chat);
        new_chat->click();  // the live conversation is another one now
        w.bridge().writer()->flush();
        ConversationPtr stored;
        {
            app::Store store(db);
            stored = std::make_shared<const app::ConversationRecord>(
                store.load_conversation(store.list_conversations().at(0).id));
        }
        QSignalSpy shown(&w, &MainWindow::conversation_shown);
        w.show_record(stored, "stored");
        QCOMPARE(shown.count(), 1);
        QCOMPARE(w.chat()->messages().size(), size_t(2));

        std::optional<RunStarted> started;
        connect(&w.bridge(), &EngineBridge::events_arrived, this, [&](const std::vector<Event>& b) {
            for (const Event& e : b)
                if (const auto* s = std::get_if<RunStarted>(&e)) started = *s;
        });
        w.send_message("And three animals?");
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 60000);
        QVERIFY(started.has_value());
        QCOMPARE(started->kept_messages, int64_t(2));  // the stored question and reply
        const auto& msgs = w.chat()->messages();
        QCOMPARE(msgs.size(), size_t(4));
        QCOMPARE(QString::fromStdString(msgs[0].text()), QString("Name three colors."));
        QCOMPARE(msgs[1].text(), first_reply);
        QCOMPARE(QString::fromStdString(msgs[2].text()), QString("And three animals?"));

        w.bridge().writer()->flush();
        app::Store store(db);
        const auto list = store.list_conversations();
        QCOMPARE(list.size(), size_t(2));  // the stored one is left as it was
        const auto a = store.load_conversation(stored->id);
        QCOMPARE(a.messages.size(), size_t(2));
        const auto b = store.load_conversation(list[0].id == stored->id ? list[1].id : list[0].id);
        QCOMPARE(b.messages.size(), size_t(4));
        QCOMPARE(b.title, a.title + " (continued)");
        QCOMPARE(b.messages[1].content, first_reply);
        QCOMPARE(b.messages[2].content, std::string("And three animals?"));
        QCOMPARE(b.messages[2].parent_id, std::optional<int64_t>(b.messages[1].id));
    }

    // A model load starts the engine afresh, and the window's chat with it: the next message goes
    // to a new conversation (not refused as meant for the one before the load).
    void a_model_load_starts_your_chat_afresh() {
        FLUORO_REQUIRE_DEFAULT_MODEL(model);
        MainWindow w(WorkbenchOptions{test::scratch("reload.db")});
        w.show();
        set_max_tokens(w, 4, 0);
        QSignalSpy loaded(&w.bridge(), &EngineBridge::model_changed);
        w.open_model(model);
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 60000);
        std::vector<RunStarted> starts;
        connect(&w.bridge(), &EngineBridge::events_arrived, this, [&](const std::vector<Event>& b) {
            for (const Event& e : b)
                if (const auto* s = std::get_if<RunStarted>(&e)) starts.push_back(*s);
        });
        QSignalSpy finished(&w, &MainWindow::run_finished);
        w.send_message("Name a color.");
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        w.open_model(model);
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 2, 60000);
        w.send_message("Hello again.");
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 60000);
        QCOMPARE(starts.size(), size_t(2));
        QCOMPARE(starts[1].kept_messages, int64_t(0));
        QVERIFY(starts[1].conversation != starts[0].conversation);
        QVERIFY2(w.error_text().isEmpty(), qPrintable(w.error_text()));
    }

    // A picked token fills the logit lens and the all-layers docks with the engine's answers for
    // it: greedy, so the lens' last layer has the token on top; every head of every layer.
    void picking_a_token_fills_the_lens_and_overview_docks() {
        FLUORO_REQUIRE_DEFAULT_MODEL(model);
        MainWindow w(WorkbenchOptions{test::scratch("lens.db")});
        w.show();
        set_max_tokens(w, 8, 0.0f);
        w.open_model(model);
        QTRY_VERIFY_WITH_TIMEOUT(w.bridge().model().has_value(), 60000);
        QSignalSpy finished(&w, &MainWindow::run_finished);
        w.send_message("Name three colors.");
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
        const auto f = finished.at(0).at(0).value<RunFinished>();
        QVERIFY2(f.error.empty(), f.error.c_str());
        QVERIFY(f.n_tokens >= 4);
        LensPanel* lens = nullptr;
        OverviewPanel* overview = nullptr;
        for (EventPanel* p : w.panels()) {
            if (auto* l = qobject_cast<LensPanel*>(p)) lens = l;
            if (auto* o = qobject_cast<OverviewPanel*>(p)) overview = o;
        }
        QVERIFY(lens && overview);
        // The lens dock's tab raised, then a token picked: the lens is asked for at once; the
        // all-layers dock, in a background tab, asks when it is raised.
        w.panel_dock(QStringLiteral("lens"))->raise();
        QTRY_VERIFY(lens->isVisible());
        emit w.chat()->token_clicked(f.run, 2);  // as a click on the token in the chat
        QTRY_VERIFY_WITH_TIMEOUT(lens->lens() != nullptr, 30000);
        QVERIFY(overview->request_pending());
        w.panel_dock(QStringLiteral("overview"))->raise();
        QTRY_VERIFY2_WITH_TIMEOUT(overview->overview() != nullptr,
                                  qPrintable(overview->headline() + " / " + w.error_text()), 30000);
        const LogitLensEvent& l = *lens->lens();
        QVERIFY2(l.error.empty(), l.error.c_str());
        QCOMPARE(l.layers.size(), size_t(30));
        QCOMPARE(l.layers.back().top.at(0).id, l.target);  // greedy: the token is the top
        QCOMPARE(l.layers.back().target_rank, int64_t(0));
        QCOMPARE(lens->table()->rowCount(), 30);
        const AttentionOverview& o = *overview->overview();
        QVERIFY2(o.error.empty(), o.error.c_str());
        QCOMPARE(o.n_layer, 30);
        QCOMPARE(o.n_head, 9);
        QCOMPARE(o.token, int64_t(2));
        QCOMPARE(o.position, l.position + 1);  // the lens looks at the position that predicted it
        QVERIFY(overview->headline().contains(QStringLiteral("30 layers × 9 heads")));
    }

    // With the cross-conversation prefix cache on, chats on the same system prompt share its
    // prefix: after the third, the prompt cache dock's tree shows the edge the two cached
    // conversations share, on the third request's path, and the cache holding both.
    void chats_share_an_edge_in_the_live_prefix_tree() {
        FLUORO_REQUIRE_DEFAULT_MODEL(model);
        MainWindow w(WorkbenchOptions{test::scratch("tree.db")});
        w.show();
        auto* slots_box = w.findChild<QSpinBox*>("prefix_cache_slots");
        QVERIFY(slots_box);
        slots_box->setValue(8);
        set_max_tokens(w, 6, 0.0f);
        w.open_model(model);
        QTRY_VERIFY_WITH_TIMEOUT(w.bridge().model().has_value(), 60000);
        QSignalSpy finished(&w, &MainWindow::run_finished);
        w.send_message("Name a color.");
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
        w.findChild<QPushButton*>("new_chat")->click();
        w.send_message("Name a fruit.");
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 120000);
        // A conversation enters the prefix cache when the engine's sequence moves on to another
        // one: after the third chat the first two are cached entries.
        w.findChild<QPushButton*>("new_chat")->click();
        w.send_message("Name a tree.");
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 3, 120000);
        PromptCachePanel* cache = nullptr;
        for (EventPanel* p : w.panels())
            if (auto* c = qobject_cast<PromptCachePanel*>(p)) cache = c;
        QVERIFY(cache);
        w.panel_dock(QStringLiteral("prompt_cache"))->raise();  // fed once on screen
        QTRY_VERIFY_WITH_TIMEOUT(cache->request_model()->rowCount() >= 1, 10000);
        const PrefixTreeView* tree = cache->tree_view();
        QTRY_VERIFY2_WITH_TIMEOUT(tree->rows().size() >= 3,
                                  qPrintable(cache->tree_notice() + " | " + cache->summary()),
                                  10000);
        bool shared_on_path = false;
        for (size_t r = 0; r < tree->rows().size(); ++r)
            if (tree->row_text(int(r)).contains(QStringLiteral("shared by 2 entries")) &&
                tree->on_path(tree->rows()[r]))
                shared_on_path = true;
        QVERIFY2(shared_on_path, qPrintable(tree->row_text(0)));
        QVERIFY2(cache->tree_notice().contains(QStringLiteral("holds 2 entries")),
                 qPrintable(cache->tree_notice()));
    }

    void the_event_loop_never_stalls_during_generation() {
        FLUORO_REQUIRE_DEFAULT_MODEL(model);
        MainWindow w(WorkbenchOptions{test::scratch("stall.db")});
        w.show();
        set_max_tokens(w, 64);
        // The heaviest live load the window sees by default: one layer's attention, every head,
        // every query row, with the sparsity readouts (what the attention panel shows).
        SetAttentionCapture capture;
        AttentionCaptureSpec spec;
        spec.layer = 0;
        spec.head = -1;
        spec.rows = 0;
        capture.specs.push_back(spec);
        capture.stats = true;
        w.bridge().submit(capture);
        w.open_model(model);
        QTRY_VERIFY_WITH_TIMEOUT(w.bridge().model().has_value(), 60000);

        // Three times: with the first tab (attention) on screen, then the profiler's (its per-step
        // chart), then the profiler's memory chart — a panel in a background tab is not fed, so
        // each run measures the panel shown.
        for (const char* shown : {"attention", "profiler", "profiler/memory"}) {
            const QString id = QString::fromLatin1(shown).section(QLatin1Char('/'), 0, 0);
            w.panel_dock(id)->raise();
            if (QString::fromLatin1(shown).endsWith(QStringLiteral("/memory")))
                w.panel_dock(id)->findChild<QTabWidget*>()->setCurrentIndex(2);
            QElapsedTimer clock;
            qint64 last = 0, worst = 0, ticks = 0;
            QTimer probe;
            probe.setInterval(5);
            probe.setTimerType(Qt::PreciseTimer);
            connect(&probe, &QTimer::timeout, this, [&] {
                const qint64 now = clock.elapsed();
                worst = std::max(worst, now - last);
                last = now;
                ++ticks;
            });
            QSignalSpy finished(&w, &MainWindow::run_finished);
            // A plain event loop (QTRY_* would sleep between its polls and hide or add gaps).
            QEventLoop loop;
            connect(&w, &MainWindow::run_finished, &loop, &QEventLoop::quit);
            QTimer::singleShot(180000, &loop, &QEventLoop::quit);
            clock.start();
            probe.start();
            w.send_message("Tell me a short story about a lighthouse keeper.");
            loop.exec();
            probe.stop();
            QCOMPARE(finished.count(), 1);
            const auto f = finished.at(0).at(0).value<RunFinished>();
            qInfo(
                "event-loop stall (%s shown): largest gap %lld ms over %lld ticks, %lld tokens "
                "in %.0f ms; slowest consume() so far: %s",
                shown, worst, ticks, static_cast<long long>(f.n_tokens), double(clock.elapsed()),
                qPrintable(w.panel_feeder()->consume_report()));
            QVERIFY(f.n_tokens > 8);
            QVERIFY2(
                worst < 50,
                qPrintable(
                    QString("largest event-loop gap %1 ms with %2 shown").arg(worst).arg(shown)));
            QTRY_VERIFY(w.panel_feeder()->idle());
        }
    }
};

QTEST_MAIN(RealModelTest)
#include "real_model_test.moc"
