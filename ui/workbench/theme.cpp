#include "workbench/theme.h"

#include <QApplication>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>

namespace fluoro::ui {

namespace {

QPalette dark_palette() {
    QPalette p;
    const QColor window(40, 42, 48), base(28, 30, 34), text(225, 226, 230), muted(130, 132, 140);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, base);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, muted);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, QColor(52, 55, 62));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, Qt::red);
    p.setColor(QPalette::Link, QColor(110, 170, 255));
    p.setColor(QPalette::Highlight, QColor(60, 110, 200));
    p.setColor(QPalette::HighlightedText, Qt::white);
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, muted);
    return p;
}

}  // namespace

void apply_theme(bool dark) {
    QApplication::setStyle(QStyleFactory::create("Fusion"));
    QApplication::setPalette(dark ? dark_palette() : QApplication::style()->standardPalette());
}

}  // namespace fluoro::ui
