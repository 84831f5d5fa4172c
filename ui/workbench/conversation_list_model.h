// The stored conversations as a list model: title (editable: an edit asks for a rename), with the
// message count and date as a tooltip. The model only shows what the store worker listed; it
// never touches the database itself.
#pragma once

#include <QAbstractListModel>

#include "workbench/store_worker.h"

namespace fluoro::ui {

class ConversationListModel : public QAbstractListModel {
    Q_OBJECT
  public:
    enum Role { IdRole = Qt::UserRole + 1, MessagesRole, IncompleteRole };
    using QAbstractListModel::QAbstractListModel;

    void set_conversations(ConversationList list);
    int64_t id_at(int row) const;
    int row_of(int64_t id) const;  // -1 when not listed

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role) override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;

  signals:
    void rename_requested(qint64 id, const QString& title);

  private:
    ConversationList list_;
};

}  // namespace fluoro::ui
