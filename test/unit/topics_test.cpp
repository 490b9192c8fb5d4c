// create_source's topic list (README "Expressions and PostgreSQL aggregates"): split, trimmed, each
// a Kafka topic name, no repeats, a bounded count; every refusal with its SQLSTATE.
#include "stoatflow/core/error.hpp"
#include "stoatflow/kafka/limits.hpp"
#include "stoatflow/kafka/topics.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using stoatflow::kafka::parse_topic_list;
using V = std::vector<std::string>;

std::string sqlstate_of(const std::string& list) {
    try {
        parse_topic_list(list);
    } catch (const stoatflow::Error& e) {
        return e.sqlstate();
    }
    return "ok";
}

TEST(TopicList, SplitsAndTrims) {
    EXPECT_EQ(parse_topic_list("pageviews"), V{"pageviews"});
    EXPECT_EQ(parse_topic_list("web_activity, purchases"), (V{"web_activity", "purchases"}));
    EXPECT_EQ(parse_topic_list(" a ,\tb.c-d_e\n, F9 "), (V{"a", "b.c-d_e", "F9"}));
    EXPECT_EQ(parse_topic_list(std::string(249, 'x')), V{std::string(249, 'x')});
    EXPECT_EQ(parse_topic_list("b, a"), (V{"b", "a"}));  // the declared order is kept
}

TEST(TopicList, RefusesBadLists) {
    for (const char* bad : {"", " ", "bad topic!", "a,,b", "a,", ",a", "a, b c", ".", "..", "a;b",
                            "ä", "a, a", "x, y, x"})
        EXPECT_EQ(sqlstate_of(bad), "22023") << bad;
    EXPECT_EQ(sqlstate_of(std::string(250, 'x')), "22023");
    EXPECT_EQ(sqlstate_of(std::string("a\0b", 3)), "22023");
}

TEST(TopicList, BoundsTheNumberOfTopics) {
    std::string list;
    for (std::size_t i = 0; i < stoatflow::kafka::kMaxTopicsPerSource; ++i)
        list += (i ? "," : "") + std::string("t") + std::to_string(i);
    EXPECT_EQ(parse_topic_list(list).size(), stoatflow::kafka::kMaxTopicsPerSource);
    EXPECT_EQ(sqlstate_of(list + ",one_more"), "54000");
    EXPECT_EQ(sqlstate_of(std::string(100000, ',')), "54000");  // stops counting early
}

TEST(TopicList, MessagesNameTheProblem) {
    try {
        parse_topic_list("a, b, a");
        FAIL();
    } catch (const stoatflow::Error& e) {
        EXPECT_EQ(std::string(e.what()), "topic \"a\" is listed more than once");
    }
    try {
        parse_topic_list("a, bad topic!");
        FAIL();
    } catch (const stoatflow::Error& e) {
        EXPECT_EQ(std::string(e.what()), "invalid Kafka topic name \"bad topic!\"");
    }
}

}  // namespace
