// Replay scrubbing: the run timeline over a stored run (the bundled demo, through app/replay's
// run_events) resets the panels and re-feeds exactly the events up to the slider; the main window
// shows a stored conversation from the same events.
#include <QSlider>
#include <QTest>

#include "panels/event_panel.h"
#include "replay/replay.h"
#include "workbench/chat_view.h"
#include "workbench/launch.h"
#include "workbench/main_window.h"
#include "workbench/run_timeline.h"
#include "workbench_test_support.h"

using namespace fluoro;
using namespace fluoro::ui;

namespace {

// Counts what it is fed, as a real panel would see it.
class CountingPanel : public EventPanel {
  public:
    using EventPanel::EventPanel;
    QString panel_id() const override { return "counting"; }
    QString title() const override { return "Counting"; }
    void consume(const std::vector<Event>& batch) override {
        fed.insert(fed.end(), batch.begin(), batch.end());
    }
    void reset() override {
        ++resets;
        fed.clear();
    }
    std::vector<Event> fed;
    int resets = 0;
};

}  // namespace

class TimelineTest : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() { test::isolate_settings(); }

    void scrubbing_refeeds_the_prefix() {
        const ConversationPtr demo = load_demo_run();
        QVERIFY(!demo->runs.empty());
        const auto events = app::run_events(*demo, demo->runs.back());
        QVERIFY(events.size() > 20);

        RunTimeline timeline;
        CountingPanel panel;
        connect(&timeline, &RunTimeline::scrubbed, &panel, [&](const std::vector<Event>& prefix) {
            panel.reset();
            panel.consume(prefix);
        });
        timeline.set_events(events, "demo");
        QCOMPARE(timeline.position(), int(events.size()));
        QCOMPARE(panel.resets, 0);  // setting the run feeds nothing

        timeline.scrub_to(10);
        QCOMPARE(panel.resets, 1);
        QCOMPARE(panel.fed.size(), size_t(10));
        QVERIFY(std::holds_alternative<RunStarted>(panel.fed.front()));
        timeline.scrub_to(3);
        QCOMPARE(panel.fed.size(), size_t(3));
        timeline.scrub_to(int(events.size()) + 50);  // clamped
        QCOMPARE(panel.fed.size(), events.size());
        QVERIFY(std::holds_alternative<RunFinished>(panel.fed.back()));

        // Dragging the slider coalesces into one scrub.
        auto* slider = timeline.findChild<QSlider*>("timeline_slider");
        QVERIFY(slider);
        const int before = panel.resets;
        for (int v : {1, 2, 3, 4, 5}) slider->setValue(v);
        QTRY_COMPARE(panel.fed.size(), size_t(5));
        QCOMPARE(panel.resets, before + 1);
    }

    void the_window_shows_a_stored_run_like_a_live_one() {
        MainWindow w(WorkbenchOptions{});
        const ConversationPtr demo = load_demo_run();
        w.show_record(demo, "Demo");
        const auto& msgs = w.chat()->messages();
        QCOMPARE(msgs.size(), demo->messages.size());
        QCOMPARE(QString::fromStdString(msgs.back().text()),
                 QString::fromStdString(demo->messages.back().content));
        QVERIFY2(msgs.back().stats.contains("stop: eog"), qPrintable(msgs.back().stats));
        QCOMPARE(w.timeline()->events().size(), app::run_events(*demo, demo->runs.back()).size());
        w.timeline()->scrub_to(5);
        QCOMPARE(w.timeline()->position(), 5);
    }
};

QTEST_MAIN(TimelineTest)
#include "timeline_test.moc"
