// MainWindow: where the docks go by default, saving and restoring the layout per user (QSettings,
// versioned), keeping the window on its screen, and View → Reset layout.
#include <QCloseEvent>
#include <QDockWidget>
#include <QGuiApplication>
#include <QScreen>
#include <QSettings>
#include <QTimer>
#include <algorithm>

#include "panels/event_panel.h"
#include "workbench/main_window.h"

namespace fluoro::ui {

namespace {

// Bump when the set of docks or their default arrangement changes: a state saved by another
// version names docks this window may not have, and restoring it half-way leaves docks stranded.
constexpr int kLayoutVersion = 3;

// The frame a window manager adds (title bar ≈ 30 px, borders ≤ 8 px) for as long as the window
// has none yet (before it is shown, frameGeometry() equals geometry()).
const QMargins kAssumedFrame(8, 32, 8, 8);

QStringList dock_names(const QMainWindow& w) {
    QStringList names;
    for (const QDockWidget* d : w.findChildren<QDockWidget*>()) names << d->objectName();
    names.sort();
    return names;
}

}  // namespace

void MainWindow::apply_default_layout() {
    addDockWidget(Qt::LeftDockWidgetArea, conversations_dock_);
    splitDockWidget(conversations_dock_, card_dock_, Qt::Vertical);
    tabifyDockWidget(card_dock_, settings_dock_);
    tabifyDockWidget(settings_dock_, server_dock_);
    card_dock_->raise();
    QDockWidget* first = nullptr;
    for (QDockWidget* dock : panel_docks_) {
        addDockWidget(Qt::RightDockWidgetArea, dock);
        if (first)
            tabifyDockWidget(first, dock);
        else
            first = dock;
    }
    addDockWidget(Qt::RightDockWidgetArea, scheduler_dock_);
    if (first) {
        tabifyDockWidget(panel_docks_.back(), scheduler_dock_);
        first->raise();
    }
    default_state_ = saveState(kLayoutVersion);
    apply_default_sizes();
}

void MainWindow::apply_default_sizes() {
    // After the next layout pass: before it the dock areas have no size to share. The left column
    // takes 21 % of the width (260-340 px: Settings and API server, fields under their labels,
    // fit without scrolling sideways), the panels a third (400-640 px: the attention heatmap's 64
    // rows readable), the chat the rest (≈ 600 px in a 1366 px wide window).
    QTimer::singleShot(0, this, [this] {
        const int left = std::clamp(width() * 21 / 100, 260, 340);
        const int right = std::clamp(width() / 3, 400, 640);
        resizeDocks({conversations_dock_, card_dock_}, {height() / 2, height() / 2}, Qt::Vertical);
        resizeDocks({card_dock_}, {left}, Qt::Horizontal);
        if (!panel_docks_.empty()) resizeDocks({panel_docks_.front()}, {right}, Qt::Horizontal);
    });
}

void MainWindow::reset_layout() {
    for (QDockWidget* d : findChildren<QDockWidget*>()) d->setFloating(false);
    restoreState(default_state_, kLayoutVersion);
    card_dock_->raise();
    if (!panel_docks_.empty()) panel_docks_.front()->raise();
    clamp_to_screen();
    apply_default_sizes();
}

QSize MainWindow::default_size() const {
    QSize size(1600, 1000);
    if (const QScreen* s = QGuiApplication::primaryScreen())
        size = size.boundedTo(s->availableGeometry().marginsRemoved(kAssumedFrame).size());
    return size;
}

void MainWindow::clamp_to_screen() {
    if (isMaximized() || isFullScreen()) return;
    // The screen under the title bar (where the user left it), else under the centre.
    QScreen* s = QGuiApplication::screenAt(geometry().topLeft());
    if (!s) s = QGuiApplication::screenAt(geometry().center());
    if (!s) s = screen();
    if (!s) return;
    QMargins frame(geometry().left() - frameGeometry().left(),
                   geometry().top() - frameGeometry().top(),
                   frameGeometry().right() - geometry().right(),
                   frameGeometry().bottom() - geometry().bottom());
    if (frame.isNull()) frame = kAssumedFrame;
    const QRect room = s->availableGeometry().marginsRemoved(frame);
    QRect g = geometry();
    g.setSize(g.size().boundedTo(room.size()));
    g.moveLeft(std::clamp(g.left(), room.left(), room.right() - g.width() + 1));
    g.moveTop(std::clamp(g.top(), room.top(), room.bottom() - g.height() + 1));
    if (g != geometry()) setGeometry(g);
}

void MainWindow::restore_layout() {
    QSettings st;
    if (const QByteArray g = st.value("window/geometry").toByteArray(); !g.isEmpty())
        restoreGeometry(g);
    clamp_to_screen();
    if (st.value("window/layout_version").toInt() == kLayoutVersion &&
        st.value("window/docks").toStringList() == dock_names(*this))
        restoreState(st.value("window/state").toByteArray(), kLayoutVersion);
}

void MainWindow::closeEvent(QCloseEvent* e) {
    QSettings st;
    st.setValue("window/geometry", saveGeometry());
    st.setValue("window/state", saveState(kLayoutVersion));
    st.setValue("window/layout_version", kLayoutVersion);
    st.setValue("window/docks", dock_names(*this));
    QMainWindow::closeEvent(e);
}

}  // namespace fluoro::ui
