#include "store/event_ids.h"

#include <memory>
#include <type_traits>

namespace fluoro::app {

Event with_id_base(Event e, uint64_t base) {
    std::visit(
        [base](auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (requires { v.run; }) {
                if (v.run != 0) v.run += base;
            } else if constexpr (requires { v->run; }) {
                // Shared snapshots are immutable: a copy carries the new number.
                if (v && v->run != 0) {
                    auto copy = std::make_shared<std::remove_const_t<typename T::element_type>>(*v);
                    copy->run += base;
                    v = std::move(copy);
                }
            }
            if constexpr (requires { v.conversation; })
                if (v.conversation != 0) v.conversation += base;
        },
        e);
    return e;
}

}  // namespace fluoro::app
