// app/common/format.h's table cell text: a piece with a pipe or a line feed stays in its cell.
#include "common/format.h"

#include <gtest/gtest.h>

namespace fluoro::app {
namespace {

TEST(Format, TableCellTextEscapesPipesAndLineFeeds) {
    EXPECT_EQ(table_cell_text("a|b\nc"), "a\\|b\\nc");
    EXPECT_EQ(table_cell_text(" plain"), " plain");
    EXPECT_EQ(table_cell_text(""), "");
}

}  // namespace
}  // namespace fluoro::app
