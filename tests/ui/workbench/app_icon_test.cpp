// The application icon: the installers' SVG compiled in (ui/workbench/icon.qrc) loads under the
// offscreen platform, renders at the usual sizes, and is the main window's icon.
#include <QTest>

#include "workbench/app_icon.h"
#include "workbench/main_window.h"
#include "workbench_test_support.h"

using namespace fluoro;
using namespace fluoro::ui;

class AppIconTest : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() { test::isolate_settings(); }

    void the_svg_renders_at_icon_sizes() {
        const QIcon icon = app_icon();
        QVERIFY(!icon.isNull());
        for (int size : {16, 48, 256}) {
            const QImage img = icon.pixmap(size, size).toImage();
            QVERIFY(!img.isNull());
            QCOMPARE(img.width(), size);
            // Something was drawn: not every pixel transparent.
            int opaque = 0;
            for (int y = 0; y < img.height(); ++y)
                for (int x = 0; x < img.width(); ++x) opaque += qAlpha(img.pixel(x, y)) > 0;
            QVERIFY2(opaque > size * size / 8, qPrintable(QString::number(opaque)));
        }
    }

    void the_main_window_wears_it() {
        MainWindow w(WorkbenchOptions{});
        QVERIFY(!w.windowIcon().isNull());
        QVERIFY(!w.windowIcon().pixmap(32, 32).isNull());
    }
};

QTEST_MAIN(AppIconTest)
#include "app_icon_test.moc"
