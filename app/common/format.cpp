#include "common/format.h"

#include <algorithm>
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

std::string aligned_table(const std::vector<std::vector<std::string>>& rows, size_t name_columns) {
    std::vector<size_t> width;
    for (const auto& row : rows) {
        if (row.size() > width.size()) width.resize(row.size(), 0);
        for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    }
    std::string out;
    for (const auto& row : rows) {
        for (size_t i = 0; i < row.size(); ++i) {
            const std::string pad(width[i] - row[i].size(), ' ');
            out += i < name_columns ? row[i] + pad : pad + row[i];
            if (i + 1 < row.size()) out += "  ";
        }
        out += '\n';
    }
    return out;
}

}  // namespace fluoro::app
