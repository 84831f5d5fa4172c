#include <QAbstractItemModelTester>
#include <QTest>
#include <cmath>

#include "panels/attention_heatmap.h"
#include "panels/attention_panel.h"
#include "panels/head_grid.h"
#include "panels/panel_util.h"
#include "synthetic_events.h"

using namespace fluoro;
using namespace fluoro::ui;

class AttentionPanelTest : public QObject {
    Q_OBJECT
  private slots:
    void says_nothing_captured_before_snapshots();
    void labels_keys_from_prompt_then_generated_tokens();
    void heatmap_shows_selected_head_with_tooltip();
    void stats_table_lists_heads_of_the_layer();
    void marks_keys_the_kv_policy_touched();
    void requests_capture_when_the_layer_changes();
    void names_missing_head_honestly();
    void reset_forgets_everything();
    void stats_alone_fill_the_grid_with_bars();
    void decode_rows_stack_into_a_matrix();
    void counts_dropped_snapshots();
    void picked_token_is_outlined();
    void grid_catches_up_after_a_burst();
    void grid_cells_share_the_layers_rows();
    void malformed_snapshots_draw_nothing();
    void thousands_of_keys_are_max_pooled_with_exact_hover();
    void more_query_rows_than_pixels_are_max_pooled_too();
};

void AttentionPanelTest::says_nothing_captured_before_snapshots() {
    AttentionPanel panel;
    QVERIFY(panel.notice().startsWith(QStringLiteral("No attention captured yet")));
    panel.consume({test::run_started(1, test::chat_prompt()), test::token(1, 0, 200, "The", 0.5)});
    QVERIFY(panel.notice().startsWith(QStringLiteral("No attention captured yet")));
    QCOMPARE(panel.state().n_layers(), 0);
}

void AttentionPanelTest::labels_keys_from_prompt_then_generated_tokens() {
    AttentionPanel panel;
    panel.consume(test::synthetic_run(1));
    const AttentionState& s = panel.state();
    QCOMPARE(s.n_layers(), 2);  // from the stats (2 × 4)
    QCOMPARE(s.n_heads(), 4);
    QCOMPARE(s.key_label(3), QStringLiteral("Why"));
    QCOMPARE(s.key_label(4), QStringLiteral("·is"));  // visible space
    QCOMPARE(s.key_label(2), QStringLiteral("↵"));
    QCOMPARE(s.key_label(14), QStringLiteral("The"));  // the first generated token
    QCOMPARE(s.key_label(99), QStringLiteral("#99"));
}

void AttentionPanelTest::heatmap_shows_selected_head_with_tooltip() {
    AttentionPanel panel;
    panel.resize(800, 600);
    panel.show();
    panel.consume(test::synthetic_run(1));
    QVERIFY(panel.notice().isEmpty());
    const AttentionSnapshot* shown = panel.heatmap()->snapshot();
    QVERIFY(shown);
    QCOMPARE(shown->layer, 0);
    QCOMPARE(shown->head, 0);
    // The prefill's 14 rows and 5 fed-back decode rows stack into one 19 × 19 matrix.
    QCOMPARE(shown->first_row, int64_t(0));
    QCOMPARE(shown->n_rows, int64_t(19));
    QCOMPARE(shown->n_cols, int64_t(19));
    QCOMPARE(panel.head_grid()->heads(), 4);
    // Somewhere inside the cells the tooltip names both tokens and the weight.
    QString tip;
    for (int x = 0; x < panel.heatmap()->width() && tip.isEmpty(); x += 5)
        for (int y = 0; y < panel.heatmap()->height() && tip.isEmpty(); y += 5)
            tip = panel.heatmap()->tooltip_at(QPoint(x, y));
    QVERIFY2(tip.contains(QStringLiteral("query #")), qPrintable(tip));
    QVERIFY(tip.contains(QStringLiteral("key #")));
    QVERIFY(tip.contains(QStringLiteral("weight")));
    panel.choose_head(2);
    QCOMPARE(panel.heatmap()->snapshot()->head, 2);
}

void AttentionPanelTest::stats_table_lists_heads_of_the_layer() {
    AttentionPanel panel;
    QAbstractItemModelTester tester(panel.stats_model(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(panel.stats_model()->rowCount(), 0);
    panel.consume(test::synthetic_run(1));
    AttentionStatsModel* m = panel.stats_model();
    QCOMPARE(m->rowCount(), 4);
    QCOMPARE(m->columnCount(), int(AttentionStatsModel::ColumnCount));
    QCOMPARE(m->index(2, AttentionStatsModel::Entropy).data(Qt::UserRole).toDouble(),
             double(1.0f + 0.1f * 2));
    QCOMPARE(m->index(3, AttentionStatsModel::SinkMass).data(Qt::UserRole).toDouble(),
             double(0.1f * 4));
    QCOMPARE(m->index(1, AttentionStatsModel::TopKMass).data().toString(), QStringLiteral("55.0%"));
    QCOMPARE(
        m->headerData(AttentionStatsModel::TopKMass, Qt::Horizontal, Qt::DisplayRole).toString(),
        QStringLiteral("Top-8 mass"));
    panel.choose_layer(1);
    QCOMPARE(m->layer(), 1);
    QCOMPARE(m->index(0, AttentionStatsModel::Entropy).data(Qt::UserRole).toDouble(),
             double(1.0f + 0.1f * 1));
}

void AttentionPanelTest::marks_keys_the_kv_policy_touched() {
    AttentionPanel panel;
    panel.consume(test::synthetic_run(1));
    // Sequence 0's blocks of 4 tokens: sink, shared, used, heavy, evicted, used.
    const AttentionState& s = panel.state();
    QCOMPARE(s.key_mark(0), std::optional(KvBlockState::Sink));
    QCOMPARE(s.key_mark(5), std::optional<KvBlockState>());
    QCOMPARE(s.key_mark(13), std::optional(KvBlockState::Heavy));
    QCOMPARE(s.key_mark(17), std::optional(KvBlockState::Evicted));
    QCOMPARE(s.key_mark(21), std::optional<KvBlockState>());
}

void AttentionPanelTest::requests_capture_when_the_layer_changes() {
    AttentionPanel panel;
    std::vector<std::pair<QString, Command>> requests;
    connect(&panel, &EventPanel::request_command, &panel,
            [&](const QString& tag, const Command& c) { requests.emplace_back(tag, c); });
    panel.consume(test::synthetic_run(1));
    QVERIFY(requests.empty());  // events alone never ask for anything
    panel.choose_layer(1);
    QCOMPARE(requests.size(), size_t(1));
    QCOMPARE(requests[0].first, QStringLiteral("attention"));
    const auto* capture = std::get_if<SetAttentionCapture>(&requests[0].second);
    QVERIFY(capture);
    QVERIFY(capture->stats);
    QCOMPARE(capture->specs.size(), size_t(1));
    QCOMPARE(capture->specs[0].layer, 1);
    QCOMPARE(capture->specs[0].head, -1);
    QCOMPARE(capture->specs[0].rows, AttentionPanel::kCaptureRows);
    panel.choose_layer(1);  // no change, no request
    QCOMPARE(requests.size(), size_t(1));
    panel.choose_head(3);
    QCOMPARE(requests.size(), size_t(2));
    QCOMPARE(std::get<SetAttentionCapture>(requests[1].second).specs[0].layer, 1);
}

void AttentionPanelTest::names_missing_head_honestly() {
    AttentionPanel panel;
    panel.consume(test::synthetic_run(1));
    panel.choose_layer(1);  // stats cover layer 1, snapshots only layer 0
    QVERIFY2(panel.notice().contains(QStringLiteral("No snapshot of layer 1, head 0")),
             qPrintable(panel.notice()));
}

void AttentionPanelTest::reset_forgets_everything() {
    AttentionPanel panel;
    panel.consume(test::synthetic_run(1));
    QVERIFY(panel.state().has_snapshots());
    panel.reset();
    QVERIFY(!panel.state().has_snapshots());
    QVERIFY(!panel.state().has_stats());
    QCOMPARE(panel.stats_model()->rowCount(), 0);
    QVERIFY(panel.heatmap()->snapshot() == nullptr);
    QVERIFY(panel.notice().startsWith(QStringLiteral("No attention captured yet")));
}

void AttentionPanelTest::stats_alone_fill_the_grid_with_bars() {
    AttentionPanel panel;
    panel.consume({test::run_started(1, test::chat_prompt()), test::attention_stats(1, 0, 3, 6)});
    QCOMPARE(panel.state().n_layers(), 3);
    QCOMPARE(panel.head_grid()->heads(), 6);
    QVERIFY(panel.notice().contains(QStringLiteral("Sparsity stats below are live")));
    // A malformed stats event (heads not n_layer × n_head) is ignored.
    AttentionStats bad = test::attention_stats(1, 1, 3, 6);
    bad.heads.pop_back();
    panel.consume({bad});
    QCOMPARE(panel.state().stats()->step, int64_t(0));
}

void AttentionPanelTest::decode_rows_stack_into_a_matrix() {
    AttentionPanel panel;
    panel.consume({test::run_started(1, test::chat_prompt()), test::attention(1, 5, 0, 0, 1, 19)});
    panel.consume({test::attention(1, 6, 0, 0, 1, 20)});
    auto s = panel.state().snapshot(0, 0);
    QVERIFY(s);
    QCOMPARE(s->first_row, int64_t(18));
    QCOMPARE(s->n_rows, int64_t(2));
    QCOMPARE(s->n_cols, int64_t(20));
    QCOMPARE(s->step, int64_t(6));
    QCOMPARE(s->weights[19], 0.0f);  // row 18 never saw key 19
    QVERIFY(s->weights[20 + 19] > 0.0f);
    QCOMPARE(panel.heatmap()->snapshot(), s.get());
    // A capture that starts over elsewhere (a gap) replaces the stack; keys can start later.
    auto later = std::make_shared<AttentionSnapshot>(*test::attention(1, 9, 0, 0, 2, 30));
    later->key_begin = 8;
    panel.consume({std::shared_ptr<const AttentionSnapshot>(later)});
    s = panel.state().snapshot(0, 0);
    QCOMPARE(s->first_row, int64_t(28));
    QCOMPARE(s->n_rows, int64_t(2));
    QCOMPARE(s->key_begin, int64_t(8));
    QCOMPARE(s->n_cols, int64_t(30));
    // At most kMaxRows rows are kept.
    std::vector<Event> many;
    for (int64_t q = 0; q < 300; ++q)
        many.emplace_back(test::attention(1, 10 + q, 0, 1, 1, 30 + q));
    panel.consume(many);
    QCOMPARE(size_t(panel.state().snapshot(0, 1)->n_rows), AttentionState::kMaxRows);
}

void AttentionPanelTest::counts_dropped_snapshots() {
    AttentionPanel panel;
    DropReport d;
    d.attention = 2;
    d.total_attention = 7;
    panel.consume({d});
    QCOMPARE(panel.state().dropped(), int64_t(7));
}

// A stored or imported snapshot whose shape its weights do not fill (2^32 x 2^32 with no weights
// passed the decoders once: 2^64 is 0 in 64 bits) is neither kept nor drawn; indexing it would
// read far past its data.
void AttentionPanelTest::malformed_snapshots_draw_nothing() {
    auto bad = std::make_shared<AttentionSnapshot>();
    bad->run = 1;
    bad->n_rows = int64_t(1) << 32;
    bad->n_cols = int64_t(1) << 32;
    QVERIFY(attention_image(*bad, log_range(*bad)).isNull());
    AttentionHeatmap heatmap;
    heatmap.resize(400, 300);
    heatmap.set_data(bad, nullptr);
    QVERIFY(heatmap.snapshot() == nullptr);
    (void)heatmap.grab();  // paints without touching the weights
    AttentionPanel panel;
    panel.consume(
        {test::run_started(1, test::chat_prompt()), std::shared_ptr<const AttentionSnapshot>(bad)});
    QCOMPARE(panel.state().n_layers(), 0);
}

// 3000 keys in a heatmap a few hundred pixels wide: each pixel column shows its block's largest
// weight, so one spike among thousands stays visible (a plain downscale samples it away), and
// the hover names the spike's key and exact weight.
void AttentionPanelTest::thousands_of_keys_are_max_pooled_with_exact_hover() {
    auto s = std::make_shared<AttentionSnapshot>();
    s->run = 1;
    s->n_rows = 2;
    s->n_cols = 3000;
    s->first_row = 2999;
    s->weights.assign(size_t(2 * 3000), 1e-6f);
    s->weights[1234] = 0.9f;  // row 0, key 1234
    AttentionHeatmap heatmap;
    heatmap.resize(500, 300);
    heatmap.set_data(s, nullptr);
    const int cols = heatmap.image_columns();
    QVERIFY2(cols > 0 && cols < 3000, qPrintable(QString::number(cols)));
    int spike_x = -1;
    for (int x = 0; x < cols; ++x) {
        const auto [first, last] = pooled_block(3000, cols, x);
        if (first <= 1234 && 1234 <= last) spike_x = x;
        if (x > 0) QCOMPARE(first, pooled_block(3000, cols, x - 1).second + 1);  // no key skipped
    }
    QVERIFY(spike_x >= 0);
    // The spike's column has the top of the color scale in row 0, its neighbours the bottom.
    const LogRange range = log_range(*s);
    QCOMPARE(heatmap.image().pixel(spike_x, 0), heat_color(range.position(0.9)).rgba());
    QVERIFY(heatmap.image().pixel((spike_x + cols / 2) % cols, 0) !=
            heatmap.image().pixel(spike_x, 0));
    // Hover over that column, in row 0: the exact key and weight.
    QPoint at(-1, -1);
    for (int x = 0; x < heatmap.width() && at.x() < 0; ++x)
        for (int y = 0; y < heatmap.height(); ++y) {
            const QString tip = heatmap.tooltip_at({x, y});
            if (tip.contains(QStringLiteral("key #1234")) &&
                tip.contains(QStringLiteral("query #2999"))) {
                at = {x, y};
                break;
            }
        }
    QVERIFY2(at.x() >= 0, "no hover position names key 1234");
    const QString tip = heatmap.tooltip_at(at);
    QVERIFY2(
        tip.contains(QStringLiteral("weight 0.9")) && tip.contains(QStringLiteral("max-pooled")),
        qPrintable(tip));
}

// 600 query rows (a long prefill captured whole) in a heatmap 300 pixels high: rows are max-pooled
// like keys, so one row's spike stays visible, and the hover names the block of queries and the
// spike's exact query, key and weight.
void AttentionPanelTest::more_query_rows_than_pixels_are_max_pooled_too() {
    auto s = std::make_shared<AttentionSnapshot>();
    s->run = 1;
    s->n_rows = 600;
    s->n_cols = 40;
    s->first_row = 100;
    s->weights.assign(size_t(600 * 40), 1e-6f);
    s->weights[size_t(321 * 40 + 7)] = 0.8f;  // query 421, key 7
    AttentionHeatmap heatmap;
    heatmap.resize(500, 300);
    heatmap.set_data(s, nullptr);
    const int rows = heatmap.image_rows();
    QVERIFY2(rows > 0 && rows < 600, qPrintable(QString::number(rows)));
    QCOMPARE(heatmap.image_columns(), 40);  // keys fit: not pooled
    int spike_y = -1;
    for (int y = 0; y < rows; ++y) {
        const auto [first, last] = pooled_block(600, rows, y);
        if (first <= 321 && 321 <= last) spike_y = y;
    }
    QVERIFY(spike_y >= 0);
    const LogRange range = log_range(*s);
    QCOMPARE(heatmap.image().pixel(7, spike_y), heat_color(range.position(0.8)).rgba());
    QVERIFY(heatmap.image().pixel(7, (spike_y + rows / 2) % rows) !=
            heatmap.image().pixel(7, spike_y));
    QString tip;
    for (int x = 0; x < heatmap.width() && tip.isEmpty(); ++x)
        for (int y = 0; y < heatmap.height(); ++y) {
            const QString t = heatmap.tooltip_at({x, y});
            if (t.contains(QStringLiteral("query #421")) && t.contains(QStringLiteral("key #7"))) {
                tip = t;
                break;
            }
        }
    QVERIFY2(!tip.isEmpty(), "no hover position names query 421 and key 7");
    QVERIFY2(tip.contains(QStringLiteral("weight 0.8")) &&
                 tip.contains(QStringLiteral("share this row (max-pooled)")),
             qPrintable(tip));
}

void AttentionPanelTest::picked_token_is_outlined() {
    AttentionPanel panel;
    panel.consume(test::synthetic_run(4));
    panel.select_token(4, 2);  // generated token 2 sits at key position 14 + 2
    QCOMPARE(panel.heatmap()->highlight(), int64_t(16));
    panel.select_token(5, 1);  // another run: ignored
    QCOMPARE(panel.heatmap()->highlight(), int64_t(16));
    panel.reset();
    QCOMPARE(panel.heatmap()->highlight(), int64_t(-1));
}

void AttentionPanelTest::grid_catches_up_after_a_burst() {
    AttentionPanel panel;
    panel.consume(test::synthetic_run(1));  // heads 0..3
    QCOMPARE(panel.head_grid()->heads(), 4);
    // A batch right after may be drawn later (the small multiples are throttled), never lost.
    panel.consume({test::attention(1, 9, 0, 5, 1, 20)});
    QTRY_COMPARE(panel.head_grid()->heads(), 6);
}

// A head whose earlier rows are missing (dropped when the view fell behind) shows the rows it has
// where they are in the layer's frame — the lower 40 % here — not stretched over its cell.
void AttentionPanelTest::grid_cells_share_the_layers_rows() {
    AttentionPanel panel;
    panel.resize(800, 600);
    panel.show();
    panel.consume({test::attention(1, 0, 0, 0, 10, 10),   // head 0: query rows 0..9
                   test::attention(1, 5, 0, 1, 4, 10)});  // head 1: rows 6..9 only
    QTRY_COMPARE(panel.head_grid()->heads(), 2);
    const HeadGrid* g = panel.head_grid();
    QTRY_VERIFY(!g->image_rect(1).isEmpty());
    const QRectF all = g->image_rect(0), part = g->image_rect(1);
    QVERIFY(!all.isEmpty());
    QCOMPARE(part.width(), all.width());
    QVERIFY(std::abs(part.height() - 0.4 * all.height()) < 1.0);
    QVERIFY(std::abs((part.top() - all.top()) - 0.6 * all.height()) < 1.0);
    QVERIFY(g->image_rect(2).isEmpty());  // no such head
}

QTEST_MAIN(AttentionPanelTest)
#include "attention_panel_test.moc"
