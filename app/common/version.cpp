#include "common/version.h"

namespace fluoro::app {

std::string_view version() {
    return "0.1.0";
}

}  // namespace fluoro::app
