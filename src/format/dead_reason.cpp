// The dead-letter reasons' names (dead_letters.reason), written once.
#include "stoatflow/format/dead_reason.hpp"

namespace stoatflow::format {

const char* to_string(DeadReason e) {
    switch (e) {
    case DeadReason::None: return "";
    case DeadReason::InvalidJson: return "invalid_json";
    case DeadReason::NotAnObject: return "not_an_object";
    case DeadReason::MissingKey: return "missing_key";
    case DeadReason::BadKey: return "bad_key";
    case DeadReason::MissingTime: return "missing_time";
    case DeadReason::BadTime: return "bad_time";
    case DeadReason::TimeOutOfRange: return "time_out_of_range";
    case DeadReason::NonNumericValue: return "non_numeric_value";
    case DeadReason::InvalidText: return "invalid_text";
    case DeadReason::BadCsv: return "bad_csv";
    case DeadReason::BadProtobuf: return "bad_protobuf";
    case DeadReason::BadAvro: return "bad_avro";
    case DeadReason::BadSchemaId: return "bad_schema_id";
    case DeadReason::KeyTooLong: return "key_too_long";
    case DeadReason::TimeInFuture: return "time_in_future";
    case DeadReason::ValueOutOfRange: return "value_out_of_range";
    case DeadReason::BadValue: return "bad_value";
    case DeadReason::ExpressionError: return "expression_error";
    case DeadReason::AggregateError: return "aggregate_error";
    case DeadReason::UserCodeTimeout: return "user_code_timeout";
    case DeadReason::OffsetsSkipped: return "offsets_skipped";
    }
    return "unknown";
}

}  // namespace stoatflow::format
