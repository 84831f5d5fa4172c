#include "workbench/app_icon.h"

#include <QFile>
#include <QPainter>
#include <QPixmap>
#include <QSvgRenderer>

// icon.qrc is compiled into the static fluoro_ui: register it before the first use.
static void init_icon_resource() {
    Q_INIT_RESOURCE(icon);
}

namespace fluoro::ui {

QIcon app_icon() {
    init_icon_resource();
    const QString path = QString::fromLatin1(kAppIconPath);
    if (!QFile::exists(path)) return {};
    QIcon icon(path);
    if (!icon.isNull() && !icon.pixmap(64, 64).isNull()) return icon;  // the SVG icon engine
    // No SVG icon engine plugin: render the SVG ourselves.
    QSvgRenderer svg(path);
    if (!svg.isValid()) return {};
    QIcon rendered;
    for (int size : {16, 24, 32, 48, 64, 128, 256}) {
        QPixmap pm(size, size);
        pm.fill(Qt::transparent);
        QPainter p(&pm);
        svg.render(&p);
        p.end();
        rendered.addPixmap(pm);
    }
    return rendered;
}

}  // namespace fluoro::ui
