// The Kafka metadata columns every row of a source with `columns` has after its declared ones
// (README "Columns"): the one table of their names, SQL types and what fills them, in row
// order. The column list refuses their names (column_list.cpp), the formats fill them
// (format::fill_metadata), the PostgreSQL layer types them (the row type, the analysis' FROM
// item, the executor's names). It sits in core because the column list does; the install
// script's plpgsql keeps its own copies (sql/stoatflow--0.1--0.2.sql).
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace stoatflow::core {

// What fills a metadata column (format::RecordMeta).
enum class MetadataField { Key, Topic, Partition, Offset, Timestamp, Headers };

struct MetadataColumn {
    const char* name;
    const char* sql_type;  // as PostgreSQL's type-name parser reads it
    MetadataField field;
};

inline constexpr MetadataColumn kMetadataColumns[] = {
    {"kafka_key", "text", MetadataField::Key},
    {"kafka_topic", "text", MetadataField::Topic},
    {"kafka_partition", "integer", MetadataField::Partition},
    {"kafka_offset", "bigint", MetadataField::Offset},
    {"kafka_timestamp", "timestamp with time zone", MetadataField::Timestamp},
    {"kafka_headers", "jsonb", MetadataField::Headers},
};
inline constexpr std::size_t kMetadataColumnCount = std::size(kMetadataColumns);

inline bool is_metadata_column(std::string_view name) {
    for (const auto& m : kMetadataColumns)
        if (name == m.name) return true;
    return false;
}

// "kafka_key, kafka_topic, ... and kafka_headers", for messages and hints.
inline std::string metadata_column_names() {
    std::string s;
    for (std::size_t i = 0; i < kMetadataColumnCount; ++i) {
        if (i > 0) s += i + 1 == kMetadataColumnCount ? " and " : ", ";
        s += kMetadataColumns[i].name;
    }
    return s;
}

}  // namespace stoatflow::core
