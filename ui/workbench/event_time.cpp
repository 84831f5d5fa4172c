#include "workbench/event_time.h"

namespace fluoro::ui {

int64_t event_time_ns(const Event& e) {
    return std::visit(
        [](const auto& v) -> int64_t {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, StepEvent>)
                return v.end_ns;
            else if constexpr (requires { v.t_ns; })
                return v.t_ns;
            else if constexpr (requires { v->t_ns; })
                return v->t_ns;
            else
                return 0;
        },
        e);
}

}  // namespace fluoro::ui
