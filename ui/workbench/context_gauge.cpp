#include "workbench/context_gauge.h"

namespace fluoro::ui {

ContextGauge::ContextGauge(QWidget* parent) : QProgressBar(parent) {
    setObjectName("context_gauge");
    setMaximumWidth(260);
    setToolTip(tr("Context fill: prompt + generated tokens of the newest run / context size"));
    set_fill(0, 0);
}

void ContextGauge::set_fill(int64_t used, int64_t ctx) {
    setRange(0, int(std::max<int64_t>(ctx, 1)));
    setValue(int(std::clamp<int64_t>(used, 0, std::max<int64_t>(ctx, 1))));
    setFormat(ctx > 0 ? tr("context %1 / %2 tokens").arg(used).arg(ctx) : tr("context —"));
}

}  // namespace fluoro::ui
