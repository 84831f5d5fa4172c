#include "workbench/conversation_list_model.h"

namespace fluoro::ui {

void ConversationListModel::set_conversations(ConversationList list) {
    beginResetModel();
    list_ = std::move(list);
    // Newest first: the store lists by id.
    std::reverse(list_.begin(), list_.end());
    endResetModel();
}

int64_t ConversationListModel::id_at(int row) const {
    return row >= 0 && row < int(list_.size()) ? list_[size_t(row)].id : 0;
}

int ConversationListModel::row_of(int64_t id) const {
    for (size_t i = 0; i < list_.size(); ++i)
        if (list_[i].id == id) return int(i);
    return -1;
}

int ConversationListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(list_.size());
}

QVariant ConversationListModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const auto& c = list_[size_t(index.row())];
    switch (role) {
        case Qt::DisplayRole:
        case Qt::EditRole:
            return c.title.empty() ? QStringLiteral("(untitled)") : QString::fromStdString(c.title);
        case Qt::ToolTipRole:
            return QStringLiteral("%1\n%2 messages, %3 runs%4")
                .arg(QString::fromStdString(c.created_at))
                .arg(c.messages)
                .arg(c.runs)
                .arg(c.incomplete ? QStringLiteral(", %1 incomplete").arg(c.incomplete)
                                  : QString());
        case IdRole:
            return qint64(c.id);
        case MessagesRole:
            return qint64(c.messages);
        case IncompleteRole:
            return qint64(c.incomplete);
        default:
            return {};
    }
}

bool ConversationListModel::setData(const QModelIndex& index, const QVariant& value, int role) {
    if (role != Qt::EditRole || !checkIndex(index, CheckIndexOption::IndexIsValid)) return false;
    const QString title = value.toString().trimmed();
    if (title.isEmpty()) return false;
    auto& c = list_[size_t(index.row())];
    c.title = title.toStdString();  // shown at once; the store worker makes it stick
    emit dataChanged(index, index, {Qt::DisplayRole, Qt::EditRole});
    emit rename_requested(c.id, title);
    return true;
}

Qt::ItemFlags ConversationListModel::flags(const QModelIndex& index) const {
    if (!index.isValid()) return Qt::NoItemFlags;
    return Qt::ItemIsSelectable | Qt::ItemIsEnabled | Qt::ItemIsEditable;
}

}  // namespace fluoro::ui
