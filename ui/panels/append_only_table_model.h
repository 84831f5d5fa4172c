// A table model over rows that a panel's state only appends to (a run's steps, its tokens) until
// it starts over (reset, another run): views are told about new rows as inserts instead of a
// reset, so selection and scroll position survive live updates. Subclasses call show_rows() when
// the state changed and read it back through source() (swapped inside the reset, so a view never
// sees the new state with the old row count).
#pragma once

#include <QAbstractTableModel>
#include <cstdint>

namespace fluoro::ui {

class AppendOnlyTableModel : public QAbstractTableModel {
    Q_OBJECT
  public:
    using QAbstractTableModel::QAbstractTableModel;
    int rowCount(const QModelIndex& parent = {}) const override;

  protected:
    // `source` identifies the state, `generation` its current contents (a new value whenever
    // rows were removed or replaced), `n` its row count now.
    void show_rows(const void* source, uint64_t generation, int n);
    const void* source() const { return source_; }

  private:
    const void* source_ = nullptr;
    uint64_t generation_ = 0;
    int rows_ = 0;
};

}  // namespace fluoro::ui
