#include <QFileInfo>
#include <QImage>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>
#include <memory>

#include "panels/event_panel.h"
#include "synthetic_events.h"

using namespace fluoro;
using namespace fluoro::ui;

namespace {
// Two runs: the second reuses part of the prompt, drafts speculatively, and carries everything
// every panel reads.
std::vector<Event> showcase() {
    using test::draft;
    std::vector<Event> ev = test::synthetic_run(1, 8);
    ev[1] = test::prefix(1, 14, 0);  // the first request finds nothing cached
    std::vector<Event> second = test::synthetic_run(2, 8);
    second.insert(second.begin() + 2,
                  test::spec_step(2, 3,
                                  {draft(200, 0.8f, 0.7f, true), draft(201, 0.6f, 0.5f, true),
                                   draft(300, 0.5f, 0.05f, false)},
                                  2, 202));
    second.insert(second.begin() + 3,
                  test::spec_step(2, 4,
                                  {draft(203, 0.9f, 0.9f, true), draft(204, 0.7f, 0.8f, true),
                                   draft(205, 0.8f, 0.9f, true), draft(206, 0.6f, 0.7f, true)},
                                  4, -1, 207));
    second.insert(
        second.begin() + 4,
        test::spec_step(2, 5, {draft(301, 0.4f, 0.02f, false), draft(302, 0.3f, 0.1f, false)}, 0,
                        204));
    ev.insert(ev.end(), second.begin(), second.end());
    return ev;
}
}  // namespace

class PanelRegistryTest : public QObject {
    Q_OBJECT
  private slots:
    void makes_every_panel_in_dock_order();
    void exports_png_and_svg();
    void exports_a_panel_never_shown();
    void renders_dark_palette();
};

void PanelRegistryTest::makes_every_panel_in_dock_order() {
    QWidget parent;
    const auto panels = make_panels(&parent);
    QStringList ids;
    for (EventPanel* p : panels) {
        ids << p->panel_id();
        QCOMPARE(p->parentWidget(), &parent);
        QVERIFY(!p->title().isEmpty());
    }
    QCOMPARE(ids, (QStringList{QStringLiteral("attention"), QStringLiteral("overview"),
                               QStringLiteral("kv"), QStringLiteral("speculative"),
                               QStringLiteral("prompt_cache"), QStringLiteral("profiler"),
                               QStringLiteral("tokens"), QStringLiteral("prompt"),
                               QStringLiteral("experts"), QStringLiteral("lens")}));
}

void PanelRegistryTest::exports_png_and_svg() {
    QWidget parent;
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const auto events = showcase();
    for (EventPanel* p : make_panels(&parent)) {
        p->resize(900, 620);
        p->show();
        // Events arrive in batches, as from the window's coalescing timer.
        for (size_t i = 0; i < events.size(); i += 7)
            p->consume(
                std::vector<Event>(events.begin() + ptrdiff_t(i),
                                   events.begin() + ptrdiff_t(std::min(events.size(), i + 7))));
        p->select_token(2, 3);
        const QString png = dir.filePath(p->panel_id() + QStringLiteral(".png"));
        const QString svg = dir.filePath(p->panel_id() + QStringLiteral(".svg"));
        QVERIFY2(p->export_image(png), qPrintable(png));
        QVERIFY2(p->export_image(svg), qPrintable(svg));
        QVERIFY(QFileInfo(png).size() > 0);
        QVERIFY(QFileInfo(svg).size() > 0);
        const QImage img(png);
        QVERIFY(!img.isNull());
        QVERIFY(img.width() >= 900);
        QFile f(svg);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QVERIFY(f.readAll().contains("<svg"));
        test::save_shot(*p, QStringLiteral("panel-") + p->panel_id() + QStringLiteral("-light"));
        p->resize(560, 640);  // the workbench's default dock width
        test::save_shot(*p, QStringLiteral("panel-") + p->panel_id() + QStringLiteral("-narrow"));
    }
}

void PanelRegistryTest::exports_a_panel_never_shown() {
    QWidget parent;
    QTemporaryDir dir;
    for (EventPanel* p : make_panels(&parent)) {
        const QString png = dir.filePath(p->panel_id() + QStringLiteral("-hidden.png"));
        QVERIFY(p->export_image(png));
        QVERIFY(!QImage(png).isNull());
        QVERIFY(!p->export_image(dir.filePath(QStringLiteral("no/such/dir/x.png"))));
    }
}

void PanelRegistryTest::renders_dark_palette() {
    QWidget parent;
    QPalette dark;
    dark.setColor(QPalette::Window, QColor(37, 37, 38));
    dark.setColor(QPalette::WindowText, QColor(220, 220, 220));
    dark.setColor(QPalette::Base, QColor(30, 30, 30));
    dark.setColor(QPalette::AlternateBase, QColor(45, 45, 48));
    dark.setColor(QPalette::Text, QColor(220, 220, 220));
    dark.setColor(QPalette::Button, QColor(50, 50, 52));
    dark.setColor(QPalette::ButtonText, QColor(220, 220, 220));
    dark.setColor(QPalette::Mid, QColor(80, 80, 80));
    dark.setColor(QPalette::PlaceholderText, QColor(150, 150, 150));
    parent.setPalette(dark);
    QTemporaryDir dir;
    const auto events = showcase();
    for (EventPanel* p : make_panels(&parent)) {
        p->resize(900, 620);
        p->show();
        p->consume(events);
        p->select_token(2, 3);
        const QString png = dir.filePath(p->panel_id() + QStringLiteral("-dark.png"));
        QVERIFY(p->export_image(png));
        // The background follows the palette.
        const QImage img(png);
        QVERIFY(qGray(img.pixel(2, 2)) < 100);
        test::save_shot(*p, QStringLiteral("panel-") + p->panel_id() + QStringLiteral("-dark"));
    }
}

QTEST_MAIN(PanelRegistryTest)
#include "panel_registry_test.moc"
