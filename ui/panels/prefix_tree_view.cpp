#include "panels/prefix_tree_view.h"

#include <QEvent>
#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>

#include "panels/panel_util.h"

namespace fluoro::ui {

PrefixTreeView::PrefixTreeView(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

void PrefixTreeView::set_event(const PrefixCacheEvent* event) {
    ev_ = event;
    rows_.clear();
    levels_.clear();
    if (ev_ && !ev_->tree.empty()) {
        // Pre-order already: every node after its parent, so one pass gives the levels.
        levels_.assign(ev_->tree.size(), 0);
        for (size_t i = 1; i < ev_->tree.size(); ++i) {
            const int p = ev_->tree[i].parent;
            levels_[i] = p >= 0 && size_t(p) < i ? levels_[size_t(p)] + 1 : 1;
            rows_.push_back(int(i));
        }
    }
    setFixedHeight(std::max(1, int(rows_.size())) * row_height() + 4);
    updateGeometry();
    update();
}

int PrefixTreeView::row_height() const {
    return fontMetrics().height() + 8;
}

QSize PrefixTreeView::sizeHint() const {
    return {480, std::max(1, int(rows_.size())) * row_height() + 4};
}

int PrefixTreeView::row_at(QPoint pos) const {
    const int r = (pos.y() - 2) / row_height();
    return pos.y() >= 2 && r >= 0 && r < int(rows_.size()) ? r : -1;
}

bool PrefixTreeView::on_path(int node) const {
    return ev_ && node > 0 && size_t(node) < ev_->tree.size() &&
           ev_->tree[size_t(node)].matched > 0;
}

QString PrefixTreeView::row_text(int row) const {
    if (!ev_ || row < 0 || row >= int(rows_.size())) return {};
    const PrefixTreeNode& n = ev_->tree[size_t(rows_[size_t(row)])];
    QString s =
        QStringLiteral("“%1” · %2 tokens · %3")
            .arg(QString::fromStdString(n.text).replace(QLatin1Char('\n'), QStringLiteral("\\n")))
            .arg(n.edge_tokens)
            .arg(format_bytes(n.bytes));
    if (n.entries > 1) s += QStringLiteral(" · shared by %1 entries").arg(n.entries);
    if (n.slot >= 0)
        s += QStringLiteral(" · entry (slot %1, %2)")
                 .arg(n.slot)
                 .arg(n.recency == 0 ? QStringLiteral("most recently used")
                                     : QStringLiteral("last use: %1 entries since").arg(n.recency));
    if (n.matched > 0)
        s += n.matched == n.edge_tokens ? QStringLiteral(" · matched whole")
                                        : QStringLiteral(" · matched %1 of %2, diverged after")
                                              .arg(n.matched)
                                              .arg(n.edge_tokens);
    return s;
}

QString PrefixTreeView::tooltip_at(QPoint pos) const {
    const int r = row_at(pos);
    if (r < 0) return {};
    const PrefixTreeNode& n = ev_->tree[size_t(rows_[size_t(r)])];
    return row_text(r) + QStringLiteral("\nprefix length at its end: %1 tokens").arg(n.depth);
}

bool PrefixTreeView::event(QEvent* event) {
    return show_hover_tooltip(this, event, [this](QPoint p) { return tooltip_at(p); }) ||
           QWidget::event(event);
}

void PrefixTreeView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QPalette pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Base));
    if (rows_.empty()) return;
    const int rh = row_height(), indent = 14;
    const QColor path = pal.color(QPalette::Highlight);
    for (int r = 0; r < int(rows_.size()); ++r) {
        const int node = rows_[size_t(r)];
        const PrefixTreeNode& n = ev_->tree[size_t(node)];
        const int x = 4 + (levels_[size_t(node)] - 1) * indent, y = 2 + r * rh;
        // The connector from the parent's row.
        p.setPen(pal.color(QPalette::Mid));
        p.drawLine(x - indent / 2, y, x - indent / 2, y + rh / 2);
        p.drawLine(x - indent / 2, y + rh / 2, x - 2, y + rh / 2);
        const QRect box(x, y + 2, width() - x - 4, rh - 4);
        // Matched share of the edge, filled with the highlight; the rest plain.
        p.fillRect(box, pal.color(QPalette::AlternateBase));
        if (n.matched > 0 && n.edge_tokens > 0) {
            const int w = int(double(box.width()) * double(n.matched) / double(n.edge_tokens));
            QColor c = path;
            c.setAlpha(n.matched == n.edge_tokens ? 110 : 70);
            p.fillRect(QRect(box.left(), box.top(), w, box.height()), c);
            if (n.matched < n.edge_tokens) {
                QPen pen(path);
                pen.setWidth(2);
                p.setPen(pen);
                p.drawLine(box.left() + w, box.top(), box.left() + w, box.bottom());
            }
        }
        if (n.slot >= 0) {
            QPen pen(category_color(2));
            pen.setWidth(2);
            p.setPen(pen);
            p.drawRect(box.adjusted(0, 0, -1, -1));
        }
        p.setPen(pal.color(QPalette::Text));
        p.drawText(box.adjusted(4, 0, -4, 0), Qt::AlignVCenter | Qt::AlignLeft,
                   fontMetrics().elidedText(row_text(r), Qt::ElideMiddle, box.width() - 8));
    }
}

}  // namespace fluoro::ui
