// Measure → …: the measurements window runs a measurement on the real default model in the
// background, stores it, lists it newest first after a reopen, draws the result's numbers (the
// chart's points are the JSON's), cancels, names a bad parameter, and shows a broken stored
// result as such instead of crashing.
#include <QAction>
#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QListWidget>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableWidget>
#include <QTest>
#include <fstream>

#include "measure/measurement.h"
#include "store/measurement_store.h"
#include "store/store.h"
#include "workbench/main_window.h"
#include "workbench/measure_runner.h"
#include "workbench/measurements_dialog.h"
#include "workbench/store_worker.h"
#include "workbench_test_support.h"

using namespace fluoro;
using namespace fluoro::ui;

namespace {

std::filesystem::path text_file() {
    const auto path = test::scratch("measure-text.txt");
    std::ofstream out(path);
    for (int i = 0; i < 200; ++i)
        out << "Line " << i << " of the story: the river carried " << (i * 7) % 13
            << " boats past the mill, and the miller counted them twice.\n";
    return path;
}

}  // namespace

class MeasurementsTest : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() { test::isolate_settings(); }

    void a_perplexity_run_is_stored_plotted_and_listed_again() {
        FLUORO_REQUIRE_DEFAULT_MODEL(model);
        const auto db = test::scratch("measurements.db");
        {
            StoreWorker store(db);
            MeasurementsDialog dialog(&store);
            QSignalSpy listed(&dialog, &MeasurementsDialog::listed);
            QVERIFY(listed.wait(10000));  // the (empty) stored list
            QCOMPARE(dialog.count(), 0);
            dialog.set_model(model);
            QSignalSpy measured(&dialog, &MeasurementsDialog::measured);
            QVERIFY(dialog.start(app::MeasureKind::Perplexity, {{"file", text_file().string()},
                                                                {"ctx", "64"},
                                                                {"max-tokens", "256"},
                                                                {"threads", "1"}}));
            QVERIFY(!dialog.start(app::MeasureKind::Perplexity, {}));  // one at a time
            QVERIFY(dialog.status_text().contains("running"));
            QVERIFY2(measured.wait(120000), qPrintable(dialog.status_text()));
            QCOMPARE(dialog.count(), 1);
            const app::MeasurementRecord* r = dialog.shown_record();
            QVERIFY(r);
            QCOMPARE(QString::fromStdString(r->kind), QString("ppl"));
            const nlohmann::json j = nlohmann::json::parse(r->result_json);
            const nlohmann::json& running = j["result"]["running_ppl"];
            QCOMPARE(int(running.size()), 4);  // 256 tokens in chunks of 64

            // One chart (perplexity per chunk), the table, the JSON.
            QCOMPARE(dialog.tabs()->count(), 3);
            auto* chart = qobject_cast<QChartView*>(dialog.tabs()->widget(0));
            QVERIFY(chart);
            const auto series = chart->chart()->series();
            QCOMPARE(series.size(), 1);
            auto* line = qobject_cast<QLineSeries*>(series[0]);
            QVERIFY(line);
            QCOMPARE(line->count(), 4);
            for (int i = 0; i < 4; ++i) {
                QCOMPARE(line->at(i).x(), double(i + 1));
                QCOMPARE(line->at(i).y(), running[size_t(i)].get<double>());
            }
            QCOMPARE(dialog.table()->rowCount(), 4);
            QVERIFY2(dialog.headline_text().contains("chunks of 64"),
                     qPrintable(dialog.headline_text()));
            const auto out = test::scratch("measurement-export.json");
            QVERIFY(dialog.export_shown(QString::fromStdString(out.string())));
            std::ifstream in(out);
            QVERIFY(nlohmann::json::parse(in)["result"]["ppl"] == j["result"]["ppl"]);
        }
        // Reopened: the stored result is listed and shown as it was.
        StoreWorker store(db);
        MeasurementsDialog dialog(&store);
        QSignalSpy listed(&dialog, &MeasurementsDialog::listed);
        QVERIFY(listed.wait(10000));
        QCOMPARE(dialog.count(), 1);
        QVERIFY(dialog.shown_view().has_value());
        QCOMPARE(dialog.shown_view()->plots.size(), size_t(1));
        QVERIFY(dialog.list()->item(0)->text().contains("Perplexity"));
    }

    void cancel_stops_and_stores_nothing() {
        FLUORO_REQUIRE_DEFAULT_MODEL(model);
        MeasurementsDialog dialog(nullptr);  // no store: kept for the session
        dialog.set_model(model);
        QSignalSpy ended(&dialog, &MeasurementsDialog::ended);
        QSignalSpy progress(dialog.runner(), &MeasureRunner::progress);
        QVERIFY(dialog.start(app::MeasureKind::Perplexity,
                             {{"file", text_file().string()}, {"ctx", "64"}, {"threads", "1"}}));
        QVERIFY(progress.wait(60000));
        dialog.runner()->cancel();
        QVERIFY(ended.wait(60000));
        QCOMPARE(dialog.status_text(), QString("Cancelled."));
        QCOMPARE(dialog.count(), 0);
    }

    void a_bad_parameter_is_named_and_no_model_is_refused() {
        MeasurementsDialog dialog(nullptr);
        QVERIFY(!dialog.start(app::MeasureKind::Perplexity, {}));
        QVERIFY(dialog.status_text().contains("Open a model first"));
        dialog.set_model("/nonexistent/model.gguf");
        QSignalSpy ended(&dialog, &MeasurementsDialog::ended);
        QVERIFY(dialog.start(app::MeasureKind::KvEval, {{"budgets", "150%"}}));
        QVERIFY(ended.wait(10000));
        QVERIFY2(dialog.status_text().contains("--budgets: '150%'"),
                 qPrintable(dialog.status_text()));
        QVERIFY(dialog.start(app::MeasureKind::Perplexity, {}));  // the file itself is missing
        QVERIFY(ended.wait(10000));
        QVERIFY2(dialog.status_text().contains("/nonexistent/model.gguf") ||
                     dialog.status_text().contains("bible"),
                 qPrintable(dialog.status_text()));
        QCOMPARE(dialog.count(), 0);
    }

    // The Measure menu has one action per measurement and opens the window on the loaded model
    // (none here: it says so and offers nothing to run).
    void the_measure_menu_opens_the_window() {
        MainWindow w(WorkbenchOptions{test::scratch("measure-menu.db")});
        for (const char* kind : {"ppl", "eval_kv", "bench_spec", "claims"})
            QVERIFY2(w.findChild<QAction*>(QString("action_measure_") + kind), kind);
        MeasurementsDialog* d = w.open_measurements();
        QVERIFY(d && d->isVisible());
        QVERIFY(!d->start(app::MeasureKind::Perplexity, {}));
        QVERIFY(d->status_text().contains("Open a model first"));
        QCOMPARE(w.open_measurements(), d);  // raised again, not a second window
    }

    void a_broken_stored_result_is_said_not_drawn() {
        const auto db = test::scratch("measurements-broken.db");
        {
            app::Store s(db);
            app::MeasurementRecord r;
            r.kind = "ppl";
            r.model_path = "/m.gguf";
            r.headline = "edited by hand";
            r.params_json = "{}";
            r.result_json = R"({"kind": "ppl", "result": {"ppl": "twelve"}})";
            app::add_measurement(s, r);
        }
        StoreWorker store(db);
        MeasurementsDialog dialog(&store);
        QSignalSpy listed(&dialog, &MeasurementsDialog::listed);
        QVERIFY(listed.wait(10000));
        QCOMPARE(dialog.count(), 1);
        QVERIFY(!dialog.shown_view().has_value());
        QVERIFY2(dialog.headline_text().contains("cannot be shown") &&
                     dialog.headline_text().contains("'ppl'"),
                 qPrintable(dialog.headline_text()));
        QCOMPARE(dialog.tabs()->count(), 0);
    }
};

QTEST_MAIN(MeasurementsTest)
#include "measurements_test.moc"
