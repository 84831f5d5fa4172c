#include "workbench/scroll_dock.h"

#include <QDockWidget>
#include <QScrollArea>

namespace fluoro::ui {

QDockWidget* make_scroll_dock(const QString& title, const QString& object_name, QWidget* content,
                              QWidget* parent) {
    auto* dock = new QDockWidget(title, parent);
    dock->setObjectName(object_name);
    auto* scroll = new QScrollArea(dock);
    scroll->setObjectName(object_name + QStringLiteral("_scroll"));
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidgetResizable(true);
    scroll->setWidget(content);
    dock->setWidget(scroll);
    return dock;
}

}  // namespace fluoro::ui
