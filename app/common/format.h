// Small text formatting helpers shared by the CLI and reports: byte sizes, counts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fluoro::app {

std::string format_bytes(uint64_t bytes);  // "93.9 MiB", "22.5 KiB", "512 B"
std::string format_count(uint64_t n);      // "134.52 M", "268.10 M", "49152"
// One number through a printf format: format_number("%.2f ms", 3.14159) = "3.14 ms".
std::string format_number(const char* printf_format, double v);
// Text for one cell of a Markdown table (or one line of a listing): '|' and line feeds escaped
// as \| and \n, so a token's piece cannot break the row.
std::string table_cell_text(std::string_view text);
// Rows as aligned text, one line each (ending in '\n'), columns two spaces apart: the first
// `name_columns` padded on the right (names), the rest on the left (numbers).
std::string aligned_table(const std::vector<std::vector<std::string>>& rows, size_t name_columns);

}  // namespace fluoro::app
