// create_source's column list: names, types as written, paths; every refusal with its SQLSTATE.
#include "stoatflow/core/column_list.hpp"

#include "stoatflow/core/error.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using stoatflow::Error;
using namespace stoatflow::core;

namespace {

// The list as one comparable line: name:type:path/path; ...
std::string show(const std::string& text) {
    std::string s;
    for (const auto& c : parse_column_list(text)) {
        if (!s.empty()) s += "; ";
        s += c.name + ":" + c.type + ":";
        for (std::size_t i = 0; i < c.path.size(); ++i) s += (i ? "/" : "") + c.path[i];
    }
    return s;
}

// The SQLSTATE and message of a refusal.
std::string refusal(const std::string& text) {
    try {
        parse_column_list(text);
    } catch (const Error& e) {
        return e.sqlstate() + " " + e.what();
    }
    return "accepted";
}

}  // namespace

TEST(ColumnList, NamesTypesAndPaths) {
    EXPECT_EQ(show("user_id text, amount numeric(10,2)"),
              "user_id:text:user_id; amount:numeric(10,2):amount");
    EXPECT_EQ(show("  Ts   timestamp with time zone ,x double precision"),
              "ts:timestamp with time zone:ts; x:double precision:x");
    EXPECT_EQ(show("city text PATH '$.address.city', \"Mixed Case\" int PATH '$.\"a b\".c'"),
              "city:text:address/city; Mixed Case:int:a b/c");
    EXPECT_EQ(show("a varchar(20)[] path '$.x', b \"my type\""),
              "a:varchar(20)[]:x; b:\"my type\":b");
    // The type named path, then a PATH clause.
    EXPECT_EQ(show("p path PATH '$.q', r path"), "p:path:q; r:path:r");
    EXPECT_EQ(show("s pg_catalog.int4, \"q\"\"x\" text"), "s:pg_catalog.int4:s; q\"x:text:q\"x");
    EXPECT_EQ(show("it text PATH '$.\"it''s\"'"), "it:text:it's");
    EXPECT_EQ(show("e text PATH '$.\"a\\\"b\"'"), "e:text:a\"b");
}

TEST(ColumnList, Refusals) {
    EXPECT_EQ(refusal(""), "42601 columns lists no column");
    EXPECT_EQ(refusal("a text, a int"), "42701 column \"a\" specified more than once");
    EXPECT_EQ(refusal("A text, a int"), "42701 column \"a\" specified more than once");
    EXPECT_EQ(refusal("kafka_key text").substr(0, 5), "42701");
    EXPECT_EQ(refusal(std::string(64, 'n') + " text").substr(0, 5), "42622");
    EXPECT_EQ(refusal("a").substr(0, 60),
              "42601 syntax error in columns at position 2 (end of input): ");
    EXPECT_NE(refusal("a, b text").find("column \"a\" has no type"), std::string::npos);
    EXPECT_NE(refusal("a text,").find("position 8 (end of input): expected a column name"),
              std::string::npos);
    EXPECT_EQ(refusal("a text b"), "accepted");  // "text b" is the type: PostgreSQL decides
    EXPECT_NE(refusal("a numeric(10,2").find("unbalanced parenthesis"), std::string::npos);
    EXPECT_NE(refusal("a text PATH '$.x' junk").find("expected \",\""), std::string::npos);
    EXPECT_NE(refusal("a text PATH '$.x").find("unterminated string literal"), std::string::npos);
    EXPECT_NE(refusal("\"\" text").find("must not be empty"), std::string::npos);
    EXPECT_NE(refusal("1a text").find("expected a column name"), std::string::npos);
    EXPECT_NE(refusal("a text 'x'").find("unexpected string literal"), std::string::npos);
}

TEST(ColumnList, PathRefusals) {
    for (const char* bad : {"x", "$", "$.", "$.a[0]", "$.*", "$..a", "lax $.a", "$.a ? (@ > 1)",
                            "$.\"a", "$.\"a\\n\"", "$a"}) {
        try {
            parse_json_path(bad);
            ADD_FAILURE() << bad << " accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.sqlstate(), "42601") << bad;
        }
    }
    EXPECT_EQ(parse_json_path("$.a.b_2.\"\""), (std::vector<std::string>{"a", "b_2", ""}));
}
