#include "panels/prompt_model.h"

#include <QColor>
#include <QPalette>

#include "panels/panel_util.h"

namespace fluoro::ui {

bool PromptState::consume(const Event& event) {
    if (const auto* r = std::get_if<RunStarted>(&event)) {
        run_ = r->run;
        ids_ = r->prompt_ids;
        pieces_ = r->prompt_pieces;
        special_ = r->prompt_special;
        raw_ = r->raw;
        template_name_ = r->chat_template;
        template_note_ = r->chat_template_note;
        return true;
    }
    return false;
}

void PromptTokenModel::set_state(const PromptState* state) {
    beginResetModel();
    state_ = state;
    endResetModel();
}

int PromptTokenModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() || !state_ ? 0 : int(state_->ids().size());
}

int PromptTokenModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant PromptTokenModel::data(const QModelIndex& index, int role) const {
    if (!state_ || !index.isValid() || index.row() >= rowCount()) return {};
    const size_t i = size_t(index.row());
    const bool special = state_->is_special(i);
    if (role == Qt::BackgroundRole && special) {
        QColor c = category_color(1);
        c.setAlpha(60);
        return c;
    }
    if (role == Qt::UserRole && index.column() == Kind) return special;
    if (role != Qt::DisplayRole) return {};
    switch (index.column()) {
        case Position:
            return qlonglong(i);
        case Id:
            return state_->ids()[i];
        case Token:
            return i < state_->pieces().size() ? piece_label(state_->pieces()[i], 48) : QString();
        case Kind:
            if (!state_->specials_known()) return QStringLiteral("?");
            return special ? QStringLiteral("special") : QString();
        default:
            return {};
    }
}

QVariant PromptTokenModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Position:
            return QStringLiteral("#");
        case Id:
            return QStringLiteral("id");
        case Token:
            return QStringLiteral("token");
        case Kind:
            return QStringLiteral("kind");
        default:
            return {};
    }
}

QString prompt_html(const PromptState& state, const QPalette& palette) {
    // Qt's rich text has no per-span borders or alpha: specials get a solid blend of the series
    // color into the base, ordinary tokens alternate base / alternate-base so boundaries show.
    const QColor base = palette.color(QPalette::Base);
    const QColor accent = category_color(1);
    const QColor special_bg((base.red() * 2 + accent.red()) / 3,
                            (base.green() * 2 + accent.green()) / 3,
                            (base.blue() * 2 + accent.blue()) / 3);
    const QString alternate = palette.color(QPalette::AlternateBase).name();
    QString h = QStringLiteral("<div style='font-family: monospace; white-space: pre-wrap;'>");
    for (size_t i = 0; i < state.pieces().size(); ++i) {
        // The piece as UTF-8 text (a token may hold part of a character: shown as U+FFFD), HTML-
        // escaped, a newline as a visible mark and a line break, other control bytes as \xNN.
        QString decoded;
        const std::string& p = state.pieces()[i];
        size_t start = 0;
        for (size_t k = 0; k <= p.size(); ++k) {
            const bool control =
                k < p.size() && static_cast<unsigned char>(p[k]) < 0x20 && p[k] != '\t';
            if (k != p.size() && !control) continue;
            decoded += QString::fromUtf8(p.data() + start, qsizetype(k - start)).toHtmlEscaped();
            if (control)
                decoded += p[k] == '\n'
                               ? QStringLiteral("↵<br>")
                               : QStringLiteral("\\x%1").arg(static_cast<unsigned char>(p[k]), 2,
                                                             16, QLatin1Char('0'));
            start = k + 1;
        }
        const QString title = QStringLiteral("#%1 · id %2").arg(i).arg(state.ids().at(i));
        if (state.is_special(i))
            h += QStringLiteral(
                     "<span title='%1' style='background-color: %2; font-weight: "
                     "bold;'>%3</span>")
                     .arg(title, special_bg.name(), decoded);
        else if (i % 2)
            h += QStringLiteral("<span title='%1' style='background-color: %2;'>%3</span>")
                     .arg(title, alternate, decoded);
        else
            h += QStringLiteral("<span title='%1'>%2</span>").arg(title, decoded);
    }
    h += QStringLiteral("</div>");
    return h;
}

}  // namespace fluoro::ui
