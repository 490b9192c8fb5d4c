// The metadata columns' one table (core/metadata_columns.hpp): the column list refuses their
// names and format::fill_metadata fills them in the table's order.
#include "stoatflow/core/metadata_columns.hpp"

#include <gtest/gtest.h>

#include <string>

#include "stoatflow/core/column_list.hpp"
#include "stoatflow/core/error.hpp"
#include "stoatflow/format/raw_row.hpp"

namespace {

using namespace stoatflow;

TEST(MetadataColumns, TheTable) {
    ASSERT_EQ(core::kMetadataColumnCount, 6u);
    EXPECT_EQ(core::metadata_column_names(),
              "kafka_key, kafka_topic, kafka_partition, kafka_offset, kafka_timestamp and "
              "kafka_headers");
    EXPECT_TRUE(core::is_metadata_column("kafka_headers"));
    EXPECT_FALSE(core::is_metadata_column("kafka"));
    try {
        core::parse_column_list("a int, kafka_offset bigint");
        FAIL() << "a metadata column's name was accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.sqlstate(), sqlstate::kDuplicateColumn);
        EXPECT_EQ(std::string(e.what()),
                  "column name \"kafka_offset\" is taken by a Kafka metadata column");
        EXPECT_EQ(e.hint(),
                  "kafka_key, kafka_topic, kafka_partition, kafka_offset, kafka_timestamp and "
                  "kafka_headers are always there; rename the column.");
    }
}

TEST(MetadataColumns, FilledInTheTablesOrder) {
    format::RawRows rows(2 + core::kMetadataColumnCount);
    const std::size_t r = rows.add_row();
    const format::KafkaHeader headers[] = {{"h", "v", 1}, {"n", nullptr, 0}, {"h", "w", 1}};
    format::RecordMeta meta;
    meta.topic = "orders";
    meta.partition = 3;
    meta.offset = 42;
    meta.key = "k1";
    meta.key_len = 2;
    meta.timestamp_ms = 1700000000000;
    meta.headers = headers;
    meta.header_count = 3;
    std::string detail;
    ASSERT_TRUE(format::fill_metadata(rows, r, 2, meta, detail)) << detail;
    auto text = [&](core::MetadataField f) {
        for (std::size_t i = 0; i < core::kMetadataColumnCount; ++i)
            if (core::kMetadataColumns[i].field == f) return std::string(rows.get(r, 2 + i).text);
        return std::string("?");
    };
    EXPECT_EQ(text(core::MetadataField::Key), "k1");
    EXPECT_EQ(text(core::MetadataField::Topic), "orders");
    EXPECT_EQ(text(core::MetadataField::Partition), "3");
    EXPECT_EQ(text(core::MetadataField::Offset), "42");
    EXPECT_EQ(text(core::MetadataField::Timestamp), "1700000000000");
    EXPECT_EQ(text(core::MetadataField::Headers), R"({"h": "w", "n": null})");
    // No key, no timestamp, no headers.
    format::RecordMeta bare;
    bare.topic = "t";
    const std::size_t r2 = rows.add_row();
    ASSERT_TRUE(format::fill_metadata(rows, r2, 2, bare, detail));
    EXPECT_EQ(rows.get(r2, 2).kind, format::RawKind::Null);
    EXPECT_EQ(rows.get(r2, 6).kind, format::RawKind::Null);
    EXPECT_EQ(std::string(rows.get(r2, 7).text), "{}");
    // A key that is not text: a dead letter invalid_text, with the key's bytes escaped.
    format::RecordMeta bad = bare;
    bad.key = "a\xff";
    bad.key_len = 2;
    EXPECT_FALSE(format::fill_metadata(rows, rows.add_row(), 2, bad, detail));
    EXPECT_EQ(detail, "the Kafka message key is not valid UTF-8 text: a\\xff");
}

}  // namespace
