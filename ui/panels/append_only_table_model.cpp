#include "panels/append_only_table_model.h"

namespace fluoro::ui {

int AppendOnlyTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : rows_;
}

void AppendOnlyTableModel::show_rows(const void* source, uint64_t generation, int n) {
    if (source && source == source_ && generation == generation_ && n >= rows_) {
        if (n > rows_) {
            beginInsertRows({}, rows_, n - 1);
            rows_ = n;
            endInsertRows();
        }
        return;
    }
    beginResetModel();
    source_ = source;
    rows_ = n;
    generation_ = generation;
    endResetModel();
}

}  // namespace fluoro::ui
