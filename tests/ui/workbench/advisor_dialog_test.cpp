// Chat → Prompt cache advisor: the dialog asks the StoreWorker for the advisor's report on the
// stored requests and shows it — the timestamp breaker with its fix, the stable-first estimate —
// filters by model, and says why when it cannot analyse (no database).
#include <QCoreApplication>
#include <QSignalSpy>
#include <QTest>
#include <filesystem>

#include "../../app/advisor/advisor_db_util.h"
#include "workbench/advisor_dialog.h"
#include "workbench/store_worker.h"

using namespace fluoro;
using namespace fluoro::ui;

class AdvisorDialogTest : public QObject {
    Q_OBJECT
  private slots:
    void shows_the_report_of_the_stored_requests();
    void a_missing_database_is_said_not_hidden();

  private:
    std::filesystem::path temp_db(const char* name) {
        const auto p = std::filesystem::temp_directory_path() /
                       (std::to_string(QCoreApplication::applicationPid()) + "-" + name);
        for (const char* suffix : {"", "-wal", "-shm"})
            std::filesystem::remove(p.string() + suffix);
        return p;
    }
};

void AdvisorDialogTest::shows_the_report_of_the_stored_requests() {
    const auto db = temp_db("advisor_dialog.db");
    app::test::write_timestamp_runs(db);
    StoreWorker store(db);
    AdvisorDialog dialog(&store);
    QSignalSpy reported(&dialog, &AdvisorDialog::reported);
    dialog.set_model("small");
    dialog.refresh();
    QVERIFY(reported.wait(10000));
    const QString r = dialog.report();
    QVERIFY2(r.contains("5 recorded request(s) on small.gguf"), qPrintable(r));
    QVERIFY2(r.contains("fix: move the timestamp at token 3 of the system message"), qPrintable(r));
    QVERIFY2(r.contains("stable first (est.)"), qPrintable(r));
    QVERIFY(dialog.status().contains("estimate"));

    dialog.set_model("nothing-like-this");
    dialog.refresh();
    QVERIFY(reported.wait(10000));
    QVERIFY2(dialog.report().contains("no recorded requests"), qPrintable(dialog.report()));
    std::filesystem::remove(db);
}

void AdvisorDialogTest::a_missing_database_is_said_not_hidden() {
    const auto db = temp_db("advisor_dialog_missing.db");
    StoreWorker store(db);
    AdvisorDialog dialog(&store);
    QSignalSpy reported(&dialog, &AdvisorDialog::reported);
    dialog.refresh();
    QVERIFY(reported.wait(10000));
    QVERIFY2(dialog.status().startsWith("Could not analyse"), qPrintable(dialog.status()));
    QVERIFY(dialog.report().isEmpty());
    QVERIFY(!std::filesystem::exists(db));  // looking does not create it

    AdvisorDialog none(nullptr);  // the window runs without a database (--db '')
    QVERIFY(none.status().contains("No session database"));
}

QTEST_MAIN(AdvisorDialogTest)
#include "advisor_dialog_test.moc"
