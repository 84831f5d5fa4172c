// Failures show in the window and the window goes on: a file that is no GGUF model, a session
// store that cannot be opened; and the window without any model says how to get one.
#include <QFile>
#include <QPushButton>
#include <QTest>

#include "workbench/chat_view.h"
#include "workbench/engine_bridge.h"
#include "workbench/main_window.h"
#include "workbench_test_support.h"

using namespace fluoro;
using namespace fluoro::ui;

class ErrorsTest : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() { test::isolate_settings(); }

    void a_bad_model_file_is_reported_in_the_window() {
        const auto bad = test::scratch("not-a-model.gguf");
        {
            QFile f(QString::fromStdString(bad.string()));
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("this is not a GGUF file at all, just text");
        }
        MainWindow w(WorkbenchOptions{test::scratch("errors.db")});
        w.show();
        w.open_model(QString::fromStdString(bad.string()));
        QTRY_VERIFY_WITH_TIMEOUT(!w.error_text().isEmpty(), 20000);
        QVERIFY2(w.error_text().contains("load_model"), qPrintable(w.error_text()));
        QVERIFY(!w.bridge().model().has_value());
        auto* send = w.findChild<QPushButton*>("send");
        QVERIFY(send && !send->isEnabled());  // nothing to send to
    }

    void an_unopenable_store_is_reported_and_the_chat_still_works() {
        const auto dir = test::scratch("store-is-a-directory");
        std::filesystem::create_directories(dir);
        MainWindow w(WorkbenchOptions{dir});
        QVERIFY2(w.error_text().contains("Session store"), qPrintable(w.error_text()));
        QVERIFY(w.store_worker() == nullptr);
        QVERIFY(w.bridge().writer() == nullptr);
    }

    void without_a_model_the_chat_says_how_to_get_one() {
        MainWindow w(WorkbenchOptions{});
        QVERIFY(w.chat()->toPlainText().contains("Open a model"));
    }
};

QTEST_MAIN(ErrorsTest)
#include "errors_test.moc"
