// Why a record is a dead letter: the one list of reasons (README "Views and tables",
// dead_letters.reason). The formats name the reasons a record cannot be read for; the record
// judge (stoatflow/flow/record_judge.hpp) names the rest and owns every rule and detail text.
// The list sits here, below both, so the decoders and the record path speak one enum.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

namespace stoatflow::format {

enum class DeadReason {
    None,  // not a dead letter
    // The formats (a record that cannot be read):
    InvalidJson,
    NotAnObject,
    MissingKey,
    BadKey,
    MissingTime,
    BadTime,
    TimeOutOfRange,
    NonNumericValue,
    InvalidText,
    BadCsv,       // format => 'csv' (csv_decoder.hpp)
    BadProtobuf,  // a protobuf body or Confluent frame that does not decode
    BadAvro,      // an Avro message that does not decode (avro.hpp)
    BadSchemaId,  // a schema id the registry does not know
    // The record judge (flow/record_judge.hpp):
    KeyTooLong,
    TimeInFuture,
    ValueOutOfRange,
    // With columns, PostgreSQL's input functions and the executor:
    BadValue,
    ExpressionError,
    AggregateError,
    UserCodeTimeout,
    // The topic's retention deleted offsets before the source read them.
    OffsetsSkipped,
};

// dead_letters.reason: "invalid_json", "not_an_object", ... ("" for None).
const char* to_string(DeadReason e);

}  // namespace stoatflow::format
