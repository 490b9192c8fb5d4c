// The name limit's one owner (core/names.hpp): 63 bytes, PostgreSQL's NAMEDATALEN - 1.
#include "stoatflow/core/names.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using namespace stoatflow;

TEST(Names, SixtyThreeBytesFitSixtyFourDoNot) {
    EXPECT_TRUE(core::name_fits(63));
    EXPECT_FALSE(core::name_fits(64));
    EXPECT_NO_THROW(core::check_name_length("column name", std::string(63, 'x'), "h"));
    // Bytes, not characters: 32 two-byte characters are 64 bytes.
    std::string e_acute;
    for (int i = 0; i < 32; ++i) e_acute += "\xc3\xa9";
    try {
        core::check_name_length("column name", e_acute, "Choose a shorter name.");
        FAIL() << "a 64-byte name passed";
    } catch (const Error& e) {
        EXPECT_EQ(e.sqlstate(), sqlstate::kNameTooLong);
        EXPECT_EQ(std::string(e.what()), "column name \"" + e_acute + "\" is longer than 63 bytes");
        EXPECT_EQ(e.hint(), "Choose a shorter name.");
    }
    EXPECT_EQ(core::name_too_long_message("a name"), "a name is longer than 63 bytes");
}

}  // namespace
