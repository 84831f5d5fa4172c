#include "common/format.h"

#include <array>
#include <cstdio>

namespace fluoro::app {

std::string format_bytes(uint64_t bytes) {
    static constexpr std::array<const char*, 5> kUnits{"B", "KiB", "MiB", "GiB", "TiB"};
    double v = double(bytes);
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < kUnits.size()) {
        v /= 1024.0;
        ++u;
    }
    char buf[32];
    if (u == 0)
        std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
    else
        std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[u]);
    return buf;
}

std::string format_count(uint64_t n) {
    char buf[32];
    if (n >= 1000000000ull)
        std::snprintf(buf, sizeof buf, "%.2f B", double(n) / 1e9);
    else if (n >= 1000000ull)
        std::snprintf(buf, sizeof buf, "%.2f M", double(n) / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(n));
    return buf;
}

std::string format_number(const char* printf_format, double v) {
    char buf[128];
    std::snprintf(buf, sizeof buf, printf_format, v);
    return buf;
}

std::string table_cell_text(std::string_view text) {
    std::string out;
    for (const char c : text) {
        if (c == '\n')
            out += "\\n";
        else if (c == '|')
            out += "\\|";
        else
            out += c;
    }
    return out;
}

}  // namespace fluoro::app
