#include "panels/panel_util.h"

#include <QEvent>
#include <QFont>
#include <QHelpEvent>
#include <QToolTip>
#include <algorithm>
#include <array>
#include <cmath>

namespace fluoro::ui {

QString piece_label(const std::string& piece, int max_chars) {
    QString out;
    for (QChar c : QString::fromUtf8(piece.data(), qsizetype(piece.size()))) {
        if (c == u'\n')
            out += QChar(0x21B5);  // ↵
        else if (c == u'\r')
            out += QStringLiteral("\\r");
        else if (c == u'\t')
            out += QChar(0x2192);  // →
        else if (c == u' ')
            out += QChar(0x00B7);  // ·
        else if (c.unicode() < 0x20)
            out += QStringLiteral("\\x%1").arg(c.unicode(), 2, 16, QChar(u'0'));
        else
            out += c;
    }
    if (out.isEmpty()) out = QStringLiteral("\u2205");  // ∅: a token that released no text
    if (max_chars > 1 && out.size() > max_chars) out = out.left(max_chars - 1) + QChar(0x2026);
    return out;
}

QString format_bytes(int64_t bytes) {
    const double b = double(bytes);
    if (std::abs(b) >= 1024.0 * 1024 * 1024)
        return QStringLiteral("%1 GiB").arg(b / (1024.0 * 1024 * 1024), 0, 'f', 2);
    if (std::abs(b) >= 1024.0 * 1024)
        return QStringLiteral("%1 MiB").arg(b / (1024.0 * 1024), 0, 'f', 1);
    if (std::abs(b) >= 1024.0) return QStringLiteral("%1 KiB").arg(b / 1024.0, 0, 'f', 1);
    return QStringLiteral("%1 B").arg(bytes);
}

QString format_ms(double ms) {
    if (ms >= 1000.0) return QStringLiteral("%1 s").arg(ms / 1000.0, 0, 'f', 2);
    if (ms >= 10.0) return QStringLiteral("%1 ms").arg(ms, 0, 'f', 1);
    return QStringLiteral("%1 ms").arg(ms, 0, 'f', 2);
}

QString format_percent(double fraction) {
    return QStringLiteral("%1%").arg(fraction * 100.0, 0, 'f', 1);
}

QColor heat_color(double t) {
    // Viridis sampled at 9 stops, linearly interpolated.
    static constexpr std::array<std::array<int, 3>, 9> stops{{{68, 1, 84},
                                                              {71, 44, 122},
                                                              {59, 81, 139},
                                                              {44, 113, 142},
                                                              {33, 144, 141},
                                                              {39, 173, 129},
                                                              {92, 200, 99},
                                                              {170, 220, 50},
                                                              {253, 231, 37}}};
    if (!(t > 0.0)) t = 0.0;  // also NaN
    t = std::min(t, 1.0);
    const double x = t * double(stops.size() - 1);
    const size_t i = std::min(size_t(x), stops.size() - 2);
    const double f = x - double(i);
    auto mix = [&](int k) {
        return int(std::lround(stops[i][k] + f * (stops[i + 1][k] - stops[i][k])));
    };
    return QColor(mix(0), mix(1), mix(2));
}

bool is_dark(const QPalette& palette) {
    return palette.color(QPalette::Window).lightness() < 128;
}

QColor kv_state_color(KvBlockState state, const QPalette& palette) {
    const bool dark = is_dark(palette);
    switch (state) {
        case KvBlockState::Free:
            return dark ? QColor(60, 63, 68) : QColor(226, 228, 232);
        case KvBlockState::Used:
            return dark ? QColor(66, 133, 200) : QColor(52, 120, 198);
        case KvBlockState::Shared:
            return dark ? QColor(64, 175, 120) : QColor(46, 150, 96);
        case KvBlockState::Sink:
            return dark ? QColor(171, 120, 220) : QColor(136, 78, 190);
        case KvBlockState::Heavy:
            return dark ? QColor(235, 170, 60) : QColor(214, 140, 20);
        case KvBlockState::Evicted:
            return dark ? QColor(210, 80, 80) : QColor(200, 55, 55);
    }
    return palette.color(QPalette::Mid);
}

QString kv_state_label(KvBlockState state) {
    switch (state) {
        case KvBlockState::Free:
            return QStringLiteral("free");
        case KvBlockState::Used:
            return QStringLiteral("used");
        case KvBlockState::Shared:
            return QStringLiteral("shared prefix");
        case KvBlockState::Sink:
            return QStringLiteral("sink");
        case KvBlockState::Heavy:
            return QStringLiteral("heavy hitter");
        case KvBlockState::Evicted:
            return QStringLiteral("evicted");
    }
    return QStringLiteral("?");
}

QColor category_color(size_t index) {
    // Tableau-10-like: distinguishable on light and dark backgrounds.
    static constexpr std::array<QRgb, 10> colors{0x4e79a7, 0xf28e2b, 0xe15759, 0x76b7b2, 0x59a14f,
                                                 0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f, 0xbab0ac};
    return QColor::fromRgb(colors[index % colors.size()]);
}

QColor text_on(const QColor& background) {
    const double l =
        0.299 * background.redF() + 0.587 * background.greenF() + 0.114 * background.blueF();
    return l > 0.55 ? QColor(20, 20, 20) : QColor(245, 245, 245);
}

void TokenVocab::add(int32_t id, const std::string& piece) {
    if (id >= 0) pieces_[id] = piece;
}

void TokenVocab::add_prompt(const RunStarted& run) {
    const size_t n = std::min(run.prompt_ids.size(), run.prompt_pieces.size());
    for (size_t i = 0; i < n; ++i) add(run.prompt_ids[i], run.prompt_pieces[i]);
}

QString TokenVocab::label(int32_t id, int max_chars) const {
    const auto it = pieces_.find(id);
    if (it == pieces_.end()) return QStringLiteral("#%1").arg(id);
    return piece_label(it->second, max_chars);
}

QLabel* make_notice(const QString& text, QWidget* parent) {
    auto* label = new QLabel(text, parent);
    label->setAlignment(Qt::AlignCenter);
    label->setWordWrap(true);
    label->setMargin(16);
    label->setForegroundRole(QPalette::PlaceholderText);
    return label;
}

bool show_hover_tooltip(QWidget* widget, QEvent* event,
                        const std::function<QString(QPoint)>& text) {
    if (event->type() != QEvent::ToolTip) return false;
    auto* help = static_cast<QHelpEvent*>(event);
    const QString tip = text(help->pos());
    if (tip.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(help->globalPos(), tip, widget);
    return true;
}

}  // namespace fluoro::ui
