// The conversation list: ConversationListModel (checked by QAbstractItemModelTester) over what the
// store worker lists from a temporary SQLite store — search, rename through the model, delete.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTest>

#include "store/store.h"
#include "workbench/conversation_list_model.h"
#include "workbench/store_worker.h"
#include "workbench_test_support.h"

using namespace fluoro;
using namespace fluoro::ui;

class ConversationListTest : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() { test::isolate_settings(); }

    void init() {
        db_ = test::scratch("conversations.db");
        app::Store s(db_);
        for (const char* title : {"Rust lifetimes", "Tomato soup", "Haiku about X-rays"}) {
            const int64_t id = s.add_conversation(title, "", "2026-11-30T12:00:00Z");
            s.add_message(id, std::nullopt, "user", std::string("about ") + title, true,
                          "2026-11-30T12:00:00Z");
        }
    }

    void lists_searches_renames_and_deletes() {
        StoreWorker worker(db_);
        ConversationListModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        quint64 want = 0;
        connect(worker.jobs(), &StoreJobs::listed, &model,
                [&](quint64 job, const ConversationList& l) {
                    if (job == want) model.set_conversations(l);
                });
        connect(&model, &ConversationListModel::rename_requested, &worker,
                [&](qint64 id, const QString& t) { worker.rename(id, t); });
        QSignalSpy changed(worker.jobs(), &StoreJobs::changed);
        QSignalSpy failed(worker.jobs(), &StoreJobs::failed);

        want = worker.list("");
        QTRY_COMPARE(model.rowCount(), 3);
        QCOMPARE(model.index(0).data().toString(), QString("Haiku about X-rays"));  // newest first
        QCOMPARE(model.index(2).data().toString(), QString("Rust lifetimes"));

        want = worker.list("SOUP");
        QTRY_COMPARE(model.rowCount(), 1);
        QCOMPARE(model.index(0).data().toString(), QString("Tomato soup"));

        want = worker.list("");
        QTRY_COMPARE(model.rowCount(), 3);
        QVERIFY(model.setData(model.index(2), "Borrow checker", Qt::EditRole));
        QCOMPARE(model.index(2).data().toString(), QString("Borrow checker"));
        QTRY_COMPARE(changed.count(), 1);
        want = worker.list("borrow");
        QTRY_COMPARE(model.rowCount(), 1);

        const qint64 soup = [&] {
            app::Store s(db_);
            for (const auto& c : s.list_conversations())
                if (c.title == "Tomato soup") return qint64(c.id);
            return qint64(0);
        }();
        worker.remove(soup);
        QTRY_COMPARE(changed.count(), 2);
        want = worker.list("");
        QTRY_COMPARE(model.rowCount(), 2);
        QCOMPARE(model.row_of(soup), -1);
        QCOMPARE(failed.count(), 0);

        worker.remove(soup);  // gone already: reported, not thrown
        QTRY_COMPARE(failed.count(), 1);
        QVERIFY(!model.setData(model.index(0), "   ", Qt::EditRole));  // blank titles refused
    }

    void loads_a_conversation_off_the_gui_thread() {
        StoreWorker worker(db_);
        ConversationPtr got;
        connect(worker.jobs(), &StoreJobs::loaded, this,
                [&](quint64, const ConversationPtr& c) { got = c; });
        worker.load(1);
        QTRY_VERIFY(got != nullptr);
        QCOMPARE(got->title, std::string("Rust lifetimes"));
        QCOMPARE(got->messages.size(), size_t(1));
    }

  private:
    std::filesystem::path db_;
};

QTEST_MAIN(ConversationListTest)
#include "conversation_list_test.moc"
