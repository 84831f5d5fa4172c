// Compare runs: CompareTokenModel and CompareStatsModel (checked by QAbstractItemModelTester) over
// two synthetic runs of the same prompt that diverge at token 3; then CompareDialog loading them
// from a temporary store through the StoreWorker ("compare with the previous run").
#include <QAbstractItemModelTester>
#include <QAction>
#include <QComboBox>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>
#include <cmath>

#include "store/store.h"
#include "workbench/compare_dialog.h"
#include "workbench/compare_model.h"
#include "workbench/main_window.h"
#include "workbench_test_support.h"

using namespace fluoro;
using namespace fluoro::ui;

namespace {

TokenEvent tok(int64_t index, int32_t id, const char* piece, double p, int64_t t_ms) {
    TokenEvent t;
    t.run = 1;
    t.index = index;
    t.id = id;
    t.piece = piece;
    t.logprob = float(std::log(p));
    t.t_ns = t_ms * 1'000'000;
    return t;
}

// Run A: "The sky is blue ." at temperature 0; run B: "The sky looks blue" (diverges at token 2,
// one token shorter) at temperature 0.8 with another KV type, slower.
app::RunRecord run_a() {
    app::RunRecord r;
    r.id = 7;
    r.model_name = "SmolLM2-135M-Instruct";
    r.model_path = "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
    r.settings_json = R"({"temperature":0,"top_k":40,"seed":42,"kv_type":"f16"})";
    r.hardware_json = R"({"backend":"cpu","threads":2})";
    r.telemetry_level = "full";
    r.started_at = "2026-11-30T12:00:00Z";
    r.prompt_tokens = 14;
    r.stop_reason = "eos";
    r.n_tokens = 5;
    r.computed_tokens = 14;
    r.prefill_ms = 70;  // 200 tok/s
    r.ttft_ms = 80;
    r.decode_ms = 40;  // 4 steps: 100 tok/s
    r.decode_steps = 4;
    r.duration_ns = 130'000'000;
    r.tokens = {tok(0, 504, "The", 0.9, 80), tok(1, 1034, " sky", 0.8, 90),
                tok(2, 314, " is", 0.5, 100), tok(3, 4160, " blue", 0.7, 110),
                tok(4, 30, ".", 0.6, 120)};
    return r;
}

app::RunRecord run_b() {
    app::RunRecord r = run_a();
    r.id = 8;
    r.settings_json = R"({"temperature":0.8,"top_k":40,"seed":42,"kv_type":"q8_0"})";
    r.started_at = "2026-11-30T12:01:00Z";
    r.stop_reason = "max_tokens";
    r.n_tokens = 4;
    r.ttft_ms = 100;
    r.decode_ms = 60;  // 3 steps: 50 tok/s
    r.decode_steps = 3;
    r.tokens = {tok(0, 504, "The", 0.85, 100), tok(1, 1034, " sky", 0.8, 115),
                tok(2, 3578, " looks", 0.3, 130), tok(3, 4160, " blue", 0.75, 160)};
    return r;
}

}  // namespace

class CompareTest : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() { test::isolate_settings(); }
    void aligns_tokens_and_marks_divergence();
    void identical_runs();
    void stats_side_by_side();
    void dialog_loads_runs_through_the_store_worker();
    void the_chat_menu_opens_it();
    void switching_conversations_replaces_the_loaded_one();
};

void CompareTest::aligns_tokens_and_marks_divergence() {
    CompareTokenModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(m.rowCount(), 0);
    QVERIFY(m.summary().startsWith(QStringLiteral("Pick two runs")));
    auto a = std::make_shared<const CompareRun>(compare_run(run_a(), "A"));
    auto b = std::make_shared<const CompareRun>(compare_run(run_b(), "B"));
    m.set_runs(a, b);
    QCOMPARE(m.rowCount(), 5);  // the longer run
    QCOMPARE(m.columnCount(), int(CompareTokenModel::ColumnCount));
    QCOMPARE(m.first_divergence(), std::optional<int>(2));
    QCOMPARE(m.diverged_count(), 2);  // " is" vs " looks", "." vs nothing
    using C = CompareTokenModel;
    const auto cell = [&](int row, int col, int role = Qt::DisplayRole) {
        return m.index(row, col).data(role);
    };
    QCOMPARE(cell(0, C::TokenA).toString(), QStringLiteral("The"));
    QCOMPARE(cell(2, C::TokenA).toString(), QStringLiteral("·is"));
    QCOMPARE(cell(2, C::TokenB).toString(), QStringLiteral("·looks"));
    QCOMPARE(cell(4, C::TokenB).toString(), QString());  // B ended
    QVERIFY(!cell(1, C::TokenA, C::DivergedRole).toBool());
    QVERIFY(cell(2, C::TokenA, C::DivergedRole).toBool());
    QVERIFY(cell(3, C::TokenA, C::DivergedRole).toBool() == false);  // same token again
    QVERIFY(cell(4, C::TokenA, C::DivergedRole).toBool());
    QVERIFY(cell(2, C::TokenA, Qt::BackgroundRole).isValid());
    QVERIFY(!cell(1, C::TokenA, Qt::BackgroundRole).isValid());
    QVERIFY(cell(2, C::Index, Qt::ToolTipRole).toString().startsWith("First divergence"));
    // Probabilities and their difference.
    QVERIFY(std::abs(cell(0, C::ProbA, C::ValueRole).toDouble() - 0.9) < 1e-6);
    QVERIFY(std::abs(cell(0, C::ProbB, C::ValueRole).toDouble() - 0.85) < 1e-6);
    QVERIFY(std::abs(cell(0, C::ProbDiff, C::ValueRole).toDouble() + 0.05) < 1e-6);
    QCOMPARE(cell(0, C::ProbDiff).toString(), QStringLiteral("-0.050"));
    // Latency: since the previous token; the first since the run started.
    QCOMPARE(cell(0, C::LatencyA, C::ValueRole).toDouble(), 80.0);
    QCOMPARE(cell(3, C::LatencyA, C::ValueRole).toDouble(), 10.0);
    QCOMPARE(cell(3, C::LatencyB, C::ValueRole).toDouble(), 30.0);
    QCOMPARE(cell(3, C::LatencyDiff, C::ValueRole).toDouble(), 20.0);
    QCOMPARE(cell(3, C::LatencyDiff).toString(), QStringLiteral("+20.0"));
    // Where B has no token: no value, a dash for the differences.
    QVERIFY(!cell(4, C::ProbB, C::ValueRole).isValid());
    QCOMPARE(cell(4, C::ProbDiff).toString(), QStringLiteral("—"));
    QVERIFY(m.summary().contains(QStringLiteral("diverge at token 2")));
    QVERIFY(m.summary().contains(QStringLiteral("“·is” (A) vs “·looks” (B)")));
    m.clear();
    QCOMPARE(m.rowCount(), 0);
}

void CompareTest::identical_runs() {
    CompareTokenModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    auto a = std::make_shared<const CompareRun>(compare_run(run_a(), "A"));
    m.set_runs(a, a);
    QVERIFY(!m.first_divergence());
    QCOMPARE(m.diverged_count(), 0);
    QVERIFY(m.summary().startsWith(QStringLiteral("Identical token streams (5 tokens)")));
    QCOMPARE(m.index(1, CompareTokenModel::ProbDiff).data(CompareTokenModel::ValueRole).toDouble(),
             0.0);
}

void CompareTest::stats_side_by_side() {
    CompareStatsModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    auto a = std::make_shared<const CompareRun>(compare_run(run_a(), "run 7"));
    auto b = std::make_shared<const CompareRun>(compare_run(run_b(), "run 8"));
    m.set_runs(a, b);
    QVERIFY(m.rowCount() > 10);
    const auto row = [&](const char* name) { return m.row_of(QString::fromUtf8(name)); };
    const auto text = [&](const char* name, int col) {
        return m.index(row(name), col).data().toString();
    };
    const auto differs = [&](const char* name) {
        return m.index(row(name), 0).data(CompareStatsModel::DiffersRole).toBool();
    };
    using C = CompareStatsModel;
    QCOMPARE(text("model", C::RunA), QStringLiteral("SmolLM2-135M-Instruct"));
    QVERIFY(!differs("model"));
    QCOMPARE(text("model file", C::RunB), QStringLiteral("SmolLM2-135M-Instruct.Q4_1.gguf"));
    // Settings key by key from settings_json; hardware from hardware_json.
    QCOMPARE(text("temperature", C::RunA), QStringLiteral("0"));
    QCOMPARE(text("temperature", C::RunB), QStringLiteral("0.8"));
    QVERIFY(differs("temperature"));
    QCOMPARE(text("kv_type", C::RunB), QStringLiteral("q8_0"));
    QVERIFY(!differs("top_k"));
    QCOMPARE(text("threads", C::RunA), QStringLiteral("2"));
    // Figures.
    QCOMPARE(text("TTFT", C::RunA), QStringLiteral("80.0 ms"));
    QCOMPARE(text("TTFT", C::RunB), QStringLiteral("100.0 ms"));
    QCOMPARE(text("TTFT", C::Diff), QStringLiteral("+20.0 (+25%) ms"));
    QCOMPARE(text("prompt tok/s", C::RunA), QStringLiteral("200.0 tok/s"));
    QCOMPARE(text("decode tok/s", C::RunA), QStringLiteral("100.0 tok/s"));
    QCOMPARE(text("decode tok/s", C::RunB), QStringLiteral("50.0 tok/s"));
    QCOMPARE(m.index(row("decode tok/s"), C::Diff).data(Qt::UserRole).toDouble(), -50.0);
    QCOMPARE(text("tokens", C::RunA), QStringLiteral("5"));
    QCOMPARE(text("tokens", C::RunB), QStringLiteral("4"));
    QCOMPARE(text("stop reason", C::RunA), QStringLiteral("eos"));
    QCOMPARE(text("stop reason", C::RunB), QStringLiteral("max_tokens"));
    QVERIFY(differs("stop reason"));
    QCOMPARE(row("acceptance rate"), -1);               // no speculative decoding in either run
    QCOMPARE(row("decode op attention µs/token"), -1);  // untraced: no rows per op

    // Both runs traced (one decode step each, one "attention" op of 300 and 900 µs): a row per
    // op, per generated token (a's 5 tokens, b's 4).
    app::RunRecord ta = run_a(), tb = run_b();
    for (app::RunRecord* r : {&ta, &tb}) {
        StepEvent s;
        s.phase = StepPhase::Decode;
        s.tokens = 1;
        s.start_ns = 0;
        s.end_ns = 1'000'000;
        auto t = std::make_shared<StepTrace>();
        t->names = {"attention"};
        const int64_t ns = r == &ta ? 300'000 : 900'000;
        t->ops.push_back({0, ns, 0, 0, 1, TimeCategory::Attention});
        s.trace = t;
        r->steps = {s};
    }
    m.set_runs(std::make_shared<const CompareRun>(compare_run(ta, "run 7")),
               std::make_shared<const CompareRun>(compare_run(tb, "run 8")));
    QVERIFY(row("decode op attention µs/token") >= 0);
    QCOMPARE(text("decode op attention µs/token", C::RunA), QStringLiteral("60.0 µs"));
    QCOMPARE(text("decode op attention µs/token", C::RunB), QStringLiteral("225.0 µs"));
    m.clear();
    QCOMPARE(m.rowCount(), 0);
}

void CompareTest::dialog_loads_runs_through_the_store_worker() {
    const auto db = test::scratch("compare.db");
    int64_t conversation = 0;
    {
        app::Store s(db);
        app::ConversationRecord c;
        c.title = "Why is the sky blue?";
        c.created_at = "2026-11-30T12:00:00Z";
        c.messages = {{1, std::nullopt, "user", "Why is the sky blue?", true, c.created_at},
                      {2, 1, "assistant", "The sky is blue.", true, c.created_at},
                      {3, 1, "assistant", "The sky looks blue", true, c.created_at}};
        app::RunRecord a = run_a(), b = run_b();
        a.message_id = 2;
        b.message_id = 3;
        c.runs = {a, b};
        conversation = s.insert_conversation(c);
    }
    StoreWorker worker(db);
    CompareDialog dialog(&worker);
    QSignalSpy compared(&dialog, &CompareDialog::compared);
    dialog.preset(conversation);  // the newest run as B, the one before it as A
    dialog.show();
    QTRY_VERIFY(compared.count() > 0);
    QTRY_COMPARE(dialog.token_model()->rowCount(), 5);
    QCOMPARE(dialog.token_model()->first_divergence(), std::optional<int>(2));
    const CompareStatsModel* stats = dialog.stats_model();
    const int stop = stats->row_of(QStringLiteral("stop reason"));
    QCOMPARE(stats->index(stop, CompareStatsModel::RunA).data().toString(), QStringLiteral("eos"));
    QCOMPARE(stats->index(stop, CompareStatsModel::RunB).data().toString(),
             QStringLiteral("max_tokens"));
    QVERIFY(dialog.summary().contains(QStringLiteral("diverge at token 2")));
    QCOMPARE(dialog.token_view()->model(), dialog.token_model());
    // FLUORO_COMPARE_SHOT=FILE saves the dialog (synthetic runs) for looking at it.
    if (const QByteArray shot = qgetenv("FLUORO_COMPARE_SHOT"); !shot.isEmpty())
        QVERIFY(dialog.grab().save(QString::fromLocal8Bit(shot)));
}

void CompareTest::the_chat_menu_opens_it() {
    const auto db = test::scratch("compare-window.db");
    {
        app::Store s(db);
        app::ConversationRecord c;
        c.title = "Sky";
        c.created_at = "2026-11-30T12:00:00Z";
        c.messages = {{1, std::nullopt, "user", "Why is the sky blue?", true, c.created_at},
                      {2, 1, "assistant", "The sky is blue.", true, c.created_at},
                      {3, 1, "assistant", "The sky looks blue", true, c.created_at}};
        app::RunRecord a = run_a(), b = run_b();
        a.message_id = 2;
        b.message_id = 3;
        c.runs = {a, b};
        s.insert_conversation(c);
    }
    MainWindow w(WorkbenchOptions{db});
    QAction* action = nullptr;
    for (QAction* a : w.findChildren<QAction*>())
        if (a->text().remove(QLatin1Char('&')).startsWith(QStringLiteral("Compare runs")))
            action = a;
    QVERIFY(action);
    QCOMPARE(action->shortcut(), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    action->trigger();
    auto* dialog = w.findChild<CompareDialog*>();
    QVERIFY(dialog);
    QVERIFY(dialog->isVisible());
    // No run shown yet: the newest conversation, its newest run as B and the one before as A.
    QTRY_COMPARE(dialog->token_model()->rowCount(), 5);
    QCOMPARE(dialog->token_model()->first_divergence(), std::optional<int>(2));
    QCOMPARE(w.open_compare(), dialog);  // raised again, not a second window
}

// Picking another conversation on a side loads it and drops the one loaded before (the window
// crashed there, freeing the old record: found trying it as a user with two stored runs).
void CompareTest::switching_conversations_replaces_the_loaded_one() {
    const auto db = test::scratch("compare-switch.db");
    std::vector<qint64> ids;
    {
        app::Store s(db);
        for (const char* title : {"First", "Second", "Third"}) {
            app::ConversationRecord c;
            c.title = title;
            c.created_at = "2026-11-30T12:00:00Z";
            c.messages = {{1, std::nullopt, "user", "Why is the sky blue?", true, c.created_at},
                          {2, 1, "assistant", "The sky is blue.", true, c.created_at}};
            app::RunRecord a = run_a();
            a.message_id = 2;
            c.runs = {a};
            ids.push_back(s.insert_conversation(c));
        }
    }
    StoreWorker worker(db);
    CompareDialog dialog(&worker);
    QSignalSpy compared(&dialog, &CompareDialog::compared);
    dialog.preset(ids[0]);
    dialog.show();
    QTRY_VERIFY(compared.count() > 0);
    QList<QComboBox*> combos = dialog.findChildren<QComboBox*>();
    QVERIFY(combos.size() >= 4);
    QComboBox* conv_a = combos[0];
    for (int round = 0; round < 6; ++round) {
        const int before = int(compared.count());
        conv_a->setCurrentIndex((conv_a->currentIndex() + 1) % conv_a->count());
        QTRY_VERIFY(compared.count() > before);
        QCOMPARE(dialog.token_model()->rowCount(), 5);
    }
}

QTEST_MAIN(CompareTest)
#include "compare_test.moc"
