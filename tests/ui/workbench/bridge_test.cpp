// EngineBridge: events pushed onto the engine's stream come out as batches, in order, on the GUI
// thread; the StoreWriter records them; the chat view and stats line follow them.
#include <QSignalSpy>
#include <QTest>

#include "runtime/engine.h"
#include "store/store.h"
#include "workbench/chat_view.h"
#include "workbench/engine_bridge.h"
#include "workbench_test_support.h"

using namespace fluoro;
using namespace fluoro::ui;

namespace {

std::vector<Event> synthetic_run(uint64_t run, int tokens) {
    std::vector<Event> ev;
    RunStarted s;
    s.run = run;
    s.conversation = 1;
    s.user_text = "hello there";
    s.prompt_tokens = 12;
    s.ctx = 256;
    s.level = TelemetryLevel::Full;
    ev.push_back(s);
    StepEvent pre;
    pre.run = run;
    pre.phase = StepPhase::Prefill;
    pre.tokens = 12;
    pre.start_ns = 0;
    pre.end_ns = 12'000'000;
    ev.push_back(pre);
    std::string text;
    for (int i = 0; i < tokens; ++i) {
        TokenEvent t;
        t.run = run;
        t.index = i;
        t.id = 100 + i;
        t.piece = i == 0 ? "Hi" : " there";
        t.t_ns = 12'000'000 + int64_t(i) * 5'000'000;
        text += t.piece;
        ev.push_back(t);
    }
    RunFinished f;
    f.run = run;
    f.stop = "eog";
    f.text = text;
    f.n_tokens = tokens;
    f.prompt_tokens = 12;
    f.computed_tokens = 12;
    f.prefill_ms = 12;
    f.ttft_ms = 12.5;
    f.decode_ms = 5.0 * (tokens - 1);
    f.decode_steps = tokens - 1;
    f.t_ns = 12'000'000 + int64_t(tokens) * 5'000'000;
    ev.push_back(f);
    return ev;
}

std::string kind_of(const Event& e) {
    return std::visit([](const auto& v) { return std::string(typeid(v).name()); }, e);
}

}  // namespace

class BridgeTest : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() { test::isolate_settings(); }

    void fans_out_every_event_in_order_and_records_them() {
        const auto db = test::scratch("bridge.db");
        EngineBridge bridge(db);
        QVERIFY(bridge.store_error().isEmpty());
        std::vector<Event> got;
        int batches = 0;
        connect(&bridge, &EngineBridge::events_arrived, this, [&](const std::vector<Event>& b) {
            ++batches;
            got.insert(got.end(), b.begin(), b.end());
        });
        QSignalSpy busy(&bridge, &EngineBridge::generating_changed);
        const auto sent = synthetic_run(1, 5);
        for (const Event& e : sent) bridge.engine().events().push(e);
        QTRY_COMPARE_WITH_TIMEOUT(got.size(), sent.size(), 5000);
        for (size_t i = 0; i < sent.size(); ++i) {
            QCOMPARE(kind_of(got[i]), kind_of(sent[i]));
            QCOMPARE(event_run(got[i]), event_run(sent[i]));
        }
        QVERIFY(batches >= 1);
        QCOMPARE(busy.count(), 2);  // on at RunStarted, off at RunFinished
        QCOMPARE(busy.at(0).at(0).toBool(), true);
        QCOMPARE(busy.at(1).at(0).toBool(), false);

        bridge.writer()->flush();
        app::Store store(db);
        const auto list = store.list_conversations();
        QCOMPARE(list.size(), size_t(1));
        const auto conv = store.load_conversation(list[0].id);
        QCOMPARE(conv.runs.size(), size_t(1));
        QCOMPARE(conv.runs[0].tokens.size(), size_t(5));
        QCOMPARE(conv.runs[0].stop_reason.value_or(""), std::string("eog"));
    }

    void a_burst_arrives_in_few_batches() {
        EngineBridge bridge({});  // no recording
        size_t events = 0;
        int batches = 0;
        connect(&bridge, &EngineBridge::events_arrived, this, [&](const std::vector<Event>& b) {
            ++batches;
            events += b.size();
        });
        const auto sent = synthetic_run(7, 2000);
        for (const Event& e : sent) bridge.engine().events().push(e);
        QTRY_COMPARE_WITH_TIMEOUT(events, sent.size(), 5000);
        // Drained per 16 ms tick, not per event (a slow push may straddle a few ticks).
        QVERIFY2(batches <= 5, qPrintable(QString::number(batches)));
    }

    void an_unopenable_store_is_reported_not_fatal() {
        const auto dir = test::scratch("not-a-db-dir");
        std::filesystem::create_directories(dir);
        EngineBridge bridge(dir);  // a directory is no database
        QVERIFY(!bridge.store_error().isEmpty());
        QVERIFY(bridge.writer() == nullptr);
    }

    void chat_view_streams_the_run_with_its_stats_line() {
        ChatView chat;
        auto ev = synthetic_run(3, 4);
        const Event finished = ev.back();
        ev.pop_back();
        chat.consume(ev);
        QCOMPARE(chat.messages().size(), size_t(2));
        QCOMPARE(chat.messages()[0].role, QString("user"));
        QCOMPARE(QString::fromStdString(chat.messages()[1].text()),
                 QString("Hi there there there"));
        QVERIFY(chat.messages()[1].streaming);
        QVERIFY2(chat.messages()[1].stats.contains("generating"),
                 qPrintable(chat.messages()[1].stats));
        QVERIFY(chat.messages()[1].stats.contains("4 tokens"));
        chat.consume({finished});
        const QString stats = chat.messages()[1].stats;
        QVERIFY2(stats.contains("TTFT 12 ms") || stats.contains("TTFT 13 ms"), qPrintable(stats));
        QVERIFY(stats.contains("decode 200.0 tok/s"));
        QVERIFY(stats.contains("prompt 1000 tok/s"));
        QVERIFY(stats.contains("stop: eog"));
        QCOMPARE(chat.last_stats()->context_used(), int64_t(16));
        QCOMPARE(chat.last_stats()->ctx(), int64_t(256));
    }

    void chat_view_edit_truncates_and_regenerate_replaces_the_reply() {
        ChatView chat;
        chat.consume(synthetic_run(1, 2));
        auto second = synthetic_run(2, 3);
        std::get<RunStarted>(second[0]).kept_messages = 2;
        chat.consume(second);
        QCOMPARE(chat.messages().size(), size_t(4));
        auto regen = synthetic_run(3, 1);
        std::get<RunStarted>(regen[0]).kind = RunKind::Regenerate;
        std::get<RunStarted>(regen[0]).kept_messages = 3;
        chat.consume(regen);
        QCOMPARE(chat.messages().size(), size_t(4));
        QCOMPARE(chat.messages()[3].run, uint64_t(3));
        auto edit = synthetic_run(4, 1);
        std::get<RunStarted>(edit[0]).kind = RunKind::Edit;
        std::get<RunStarted>(edit[0]).kept_messages = 0;
        std::get<RunStarted>(edit[0]).user_text = "edited";
        chat.consume(edit);
        QCOMPARE(chat.messages().size(), size_t(2));
        QCOMPARE(QString::fromStdString(chat.messages()[0].text()), QString("edited"));
    }
};

QTEST_MAIN(BridgeTest)
#include "bridge_test.moc"
