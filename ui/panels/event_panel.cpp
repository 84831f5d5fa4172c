#include "panels/event_panel.h"

#include <QFileInfo>
#include <QLayout>
#include <QPainter>
#include <QPixmap>
#include <QSvgGenerator>

#include "panels/line_chart.h"

namespace fluoro::ui {

void EventPanel::select_token(uint64_t, int64_t) {}

bool EventPanel::export_image(const QString& path) {
    // A panel that was never shown has no geometry yet: give it its preferred size and lay it out
    // so that what is saved matches what a dock would show.
    if (!isVisible()) {
        if (size().width() < 64 || size().height() < 64) resize(sizeHint().expandedTo({640, 420}));
        ensurePolished();
        if (layout()) layout()->activate();
    }
    // Charts hold back points while hidden or between throttled updates: show all of them.
    for (LineChart* chart : findChildren<LineChart*>()) chart->flush();
    if (QFileInfo(path).suffix().compare("svg", Qt::CaseInsensitive) == 0) {
        QSvgGenerator svg;
        svg.setFileName(path);
        svg.setSize(size());
        svg.setViewBox(rect());
        svg.setTitle(title());
        svg.setDescription(QStringLiteral("Fluoroscope panel ") + panel_id());
        QPainter painter;
        if (!painter.begin(&svg)) return false;
        render(&painter, QPoint(), QRegion(), RenderFlag::DrawWindowBackground | DrawChildren);
        return painter.end();
    }
    const QPixmap pixmap = grab();
    if (pixmap.isNull()) return false;
    const QString suffix = QFileInfo(path).suffix();
    return pixmap.save(path, suffix.isEmpty() ? "PNG" : nullptr);
}

}  // namespace fluoro::ui
