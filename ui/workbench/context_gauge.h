// The context-fill gauge: prompt + generated tokens of the newest run against its context size,
// as the run's events report them.
#pragma once

#include <QProgressBar>
#include <cstdint>

namespace fluoro::ui {

class ContextGauge : public QProgressBar {
    Q_OBJECT
  public:
    explicit ContextGauge(QWidget* parent = nullptr);
    void set_fill(int64_t used, int64_t ctx);
};

}  // namespace fluoro::ui
