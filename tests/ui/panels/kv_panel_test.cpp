#include <QAbstractItemModelTester>
#include <QTest>

#include "panels/kv_panel.h"
#include "panels/line_chart.h"
#include "synthetic_events.h"

using namespace fluoro;
using namespace fluoro::ui;

class KvPanelTest : public QObject {
    Q_OBJECT
  private slots:
    void says_no_snapshot_yet();
    void block_table_per_sequence();
    void counts_blocks_by_state();
    void bytes_used_against_budget_over_time();
    void grid_tooltip_names_block_state_and_owner();
    void block_ranges_compress();
    void reset_forgets_everything();
    void counts_dropped_snapshots();
    void says_how_window_layers_store_their_rows();
};

void KvPanelTest::says_no_snapshot_yet() {
    KvPanel panel;
    QVERIFY(panel.notice().startsWith(QStringLiteral("No KV cache snapshot yet")));
    QVERIFY(panel.budget_text().contains(QStringLiteral("no memory counters")));
}

void KvPanelTest::block_table_per_sequence() {
    KvPanel panel;
    QAbstractItemModelTester tester(panel.block_model(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    panel.consume(test::synthetic_run(1));
    QVERIFY(panel.notice().isEmpty());
    KvBlockTableModel* m = panel.block_model();
    QCOMPARE(m->rowCount(), 2);
    QCOMPARE(m->index(0, KvBlockTableModel::Sequence).data(Qt::UserRole).toInt(), 0);
    QCOMPARE(m->index(0, KvBlockTableModel::Blocks).data(Qt::UserRole).toLongLong(), 6);
    QCOMPARE(m->index(0, KvBlockTableModel::Tokens).data(Qt::UserRole).toLongLong(), 22);
    QCOMPARE(m->index(0, KvBlockTableModel::Bytes).data(Qt::UserRole).toLongLong(), 22 * 18432);
    QCOMPARE(m->index(0, KvBlockTableModel::BlockIds).data().toString(), QStringLiteral("0–5"));
    QCOMPARE(m->index(1, KvBlockTableModel::BlockIds).data().toString(), QStringLiteral("6–7"));
    QVERIFY(m->index(1, KvBlockTableModel::States)
                .data()
                .toString()
                .contains(QStringLiteral("shared prefix 2")));
    // A later snapshot replaces the table.
    panel.consume({test::kv_snapshot(1, 9, {{3, KvBlockState::Used, 4}, {}, {}})});
    QCOMPARE(m->rowCount(), 1);
    QCOMPARE(m->index(0, KvBlockTableModel::Sequence).data().toString(), QStringLiteral("seq 3"));
}

void KvPanelTest::counts_blocks_by_state() {
    KvPanel panel;
    panel.consume(test::synthetic_run(1));
    const auto c = panel.state().state_counts();
    QCOMPARE(c[size_t(KvBlockState::Free)], 16);
    QCOMPARE(c[size_t(KvBlockState::Used)], 2);
    QCOMPARE(c[size_t(KvBlockState::Shared)], 3);
    QCOMPARE(c[size_t(KvBlockState::Sink)], 1);
    QCOMPARE(c[size_t(KvBlockState::Heavy)], 1);
    QCOMPARE(c[size_t(KvBlockState::Evicted)], 1);
}

void KvPanelTest::bytes_used_against_budget_over_time() {
    KvPanel panel;
    panel.consume(test::synthetic_run(1, 6));
    QCOMPARE(panel.state().memory().size(), size_t(7));
    QCOMPARE(panel.chart()->point_count(0), 7);
    // The last counters: 20 tokens of 18432 bytes against 4096 tokens' worth.
    QVERIFY2(panel.budget_text().startsWith(QStringLiteral("KV used 360.0 KiB of 72.0 MiB")),
             qPrintable(panel.budget_text()));
    // A new run starts a new history.
    panel.consume({test::run_started(2, test::chat_prompt())});
    QCOMPARE(panel.chart()->point_count(0), 0);
}

void KvPanelTest::grid_tooltip_names_block_state_and_owner() {
    KvPanel panel;
    panel.resize(700, 500);
    panel.show();
    panel.consume(test::synthetic_run(1));
    KvGrid* grid = panel.grid();
    int first = -1;
    QPoint at;
    for (int y = 0; y < grid->height() && first < 0; ++y)
        for (int x = 0; x < grid->width() && first < 0; ++x)
            if (grid->block_at(QPoint(x, y)) == 0) {
                first = 0;
                at = QPoint(x, y);
            }
    QCOMPARE(first, 0);
    const QString tip = grid->tooltip_at(at);
    QVERIFY2(tip.contains(QStringLiteral("block 0 · sink · seq 0")), qPrintable(tip));
    QVERIFY(tip.contains(QStringLiteral("4 / 4 tokens")));
}

void KvPanelTest::block_ranges_compress() {
    QCOMPARE(block_ranges({0, 1, 2, 5, 7, 8}), QStringLiteral("0–2, 5, 7–8"));
    QCOMPARE(block_ranges({}), QString());
    QCOMPARE(block_ranges({4}), QStringLiteral("4"));
}

void KvPanelTest::reset_forgets_everything() {
    KvPanel panel;
    QAbstractItemModelTester tester(panel.block_model(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    panel.consume(test::synthetic_run(1));
    panel.reset();
    QCOMPARE(panel.block_model()->rowCount(), 0);
    QVERIFY(!panel.state().snapshot());
    QCOMPARE(panel.chart()->point_count(0), 0);
    QVERIFY(panel.notice().startsWith(QStringLiteral("No KV cache snapshot yet")));
}

void KvPanelTest::counts_dropped_snapshots() {
    KvPanel panel;
    DropReport d;
    d.kv = 3;
    d.total_kv = 5;
    panel.consume(test::synthetic_run(1));
    panel.consume({d});
    QCOMPARE(panel.state().dropped(), int64_t(5));
}

// From ModelLoaded (the window, the bytes allocated and storing every token) and the latest
// MemoryCounters: an evicting policy rebuilds the cache with every row, the allocation says so.
void KvPanelTest::says_how_window_layers_store_their_rows() {
    KvPanel panel;
    ModelLoaded ml;
    ml.kv_window = 512;
    ml.kv_bytes = 28 << 20;
    ml.kv_bytes_if_full = 72 << 20;
    panel.consume({ml});
    QCOMPARE(panel.state().window_storage(),
             QStringLiteral("window layers keep their last 512 keys: 28.0 MiB allocated, 72.0 MiB "
                            "storing every token"));
    QVERIFY2(panel.summary().contains(QStringLiteral("keep their last 512 keys")),
             qPrintable(panel.summary()));
    // A new run resets the panel, not what the model's cache is.
    panel.reset();
    QVERIFY(panel.state().window_storage().contains(QStringLiteral("512 keys")));
    MemoryCounters m;
    m.kv_bytes = 72 << 20;
    panel.consume({m});
    QVERIFY2(panel.summary().contains(QStringLiteral("store every token")),
             qPrintable(panel.summary()));
    m.kv_bytes = 5 << 20;  // a stored run of another model: nothing said
    panel.consume({m});
    QVERIFY(panel.state().window_storage().isEmpty());
    // A run's own counters say it when the panel never saw the load (it was hidden then).
    panel.consume({ModelLoaded{}});
    m.kv_window = 32;
    m.kv_bytes_if_full = 9 << 20;
    panel.consume({m});
    QCOMPARE(panel.state().window_storage(),
             QStringLiteral("window layers keep their last 32 keys: 5.0 MiB allocated, 9.0 MiB "
                            "storing every token"));
    // Stored every token from the load: the engine's reason.
    ModelLoaded full;
    full.kv_window_note = "the sliding-window layers store every token: --swa-full";
    panel.consume({full});
    QCOMPARE(panel.state().window_storage(), QString::fromStdString(full.kv_window_note));
    // A model without window layers: nothing to say.
    panel.consume({ModelLoaded{}});
    QVERIFY(panel.state().window_storage().isEmpty());
}

QTEST_MAIN(KvPanelTest)
#include "kv_panel_test.moc"
