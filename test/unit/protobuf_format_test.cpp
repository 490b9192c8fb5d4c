// format 'protobuf' behind the seam (row_decoder.hpp, protobuf_rows.cpp): the options checked
// once, the columns a source without `columns` gets, declared columns checked against the
// message, and the decoder make_row_decoder picks. The descriptor set and the messages are
// Google's (protobuf_fixtures.inc, protobuf_reference/gen.py).
#include "stoatflow/core/error.hpp"
#include "stoatflow/format/row_decoder.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

#include "protobuf_fixtures.inc"

using stoatflow::Error;
using stoatflow::format::DeadReason;
using stoatflow::format::FormatKind;
using stoatflow::format::FormatOption;
using stoatflow::format::RawKind;
using stoatflow::format::RawRows;
using stoatflow::format::RecordFormat;

std::string base64(const std::string& b, std::size_t wrap = 0) {
    static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::size_t i = 0;
    const auto at = [&](std::size_t j) { return static_cast<unsigned char>(b[j]); };
    for (; i + 2 < b.size(); i += 3) {
        const unsigned v = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
        out += {k[v >> 18], k[v >> 12 & 63], k[v >> 6 & 63], k[v & 63]};
    }
    if (b.size() - i == 1) {
        const unsigned v = at(i) << 16;
        out += {k[v >> 18], k[v >> 12 & 63], '=', '='};
    } else if (b.size() - i == 2) {
        const unsigned v = at(i) << 16 | at(i + 1) << 8;
        out += {k[v >> 18], k[v >> 12 & 63], k[v >> 6 & 63], '='};
    }
    if (wrap == 0) return out;
    std::string lines;
    for (std::size_t p = 0; p < out.size(); p += wrap) lines += out.substr(p, wrap) + "\n";
    return lines;
}

FormatOption opt(const std::string& name, const std::string& value,
                 FormatOption::Type type = FormatOption::Type::String) {
    return FormatOption{name, value, type};
}

RecordFormat order_format() {
    return stoatflow::format::parse_record_format(
        "protobuf", {opt("descriptor", base64(kShopDescriptorSet)), opt("message", "shop.Order")});
}

// The SQLSTATE and message parse_record_format refuses these options with.
std::pair<std::string, std::string> refusal(const std::vector<FormatOption>& options) {
    try {
        stoatflow::format::parse_record_format("protobuf", options);
    } catch (const Error& e) {
        return {e.sqlstate(), e.what()};
    }
    return {"accepted", ""};
}

std::pair<std::string, std::string>
column_refusal(const std::vector<std::string>& names,
               const std::vector<std::vector<std::string>>& paths) {
    try {
        stoatflow::format::check_schema_columns(order_format(), names, paths);
    } catch (const Error& e) {
        return {e.sqlstate(), e.what()};
    }
    return {"accepted", ""};
}

TEST(ProtobufFormat, ReadsTheOptions) {
    const RecordFormat f = order_format();
    EXPECT_EQ(f.kind, FormatKind::Protobuf);
    ASSERT_NE(f.proto.message, nullptr);
    EXPECT_EQ(f.proto.message->full_name, "shop.Order");
    EXPECT_STREQ(stoatflow::format::format_name(f.kind), "protobuf");
    // base64 as `base64` writes it without -w0: lines of 76 characters.
    const RecordFormat wrapped = stoatflow::format::parse_record_format(
        "protobuf", {opt("message", ".shop.Order.Customer"),
                     opt("descriptor", base64(kShopDescriptorSet, 76))});
    EXPECT_EQ(wrapped.proto.message->full_name, "shop.Order.Customer");
    // The name alone, before the options are judged.
    EXPECT_EQ(stoatflow::format::parse_format_name("protobuf"), FormatKind::Protobuf);
    EXPECT_THROW(stoatflow::format::parse_format_name("proto"), Error);
}

TEST(ProtobufFormat, RefusesBadOptionsNamingWhatIsWrong) {
    const std::string desc = base64(kShopDescriptorSet);
    const auto missing = refusal({opt("message", "shop.Order")});
    EXPECT_EQ(missing.first, "22023");
    EXPECT_NE(missing.second.find("needs exactly one of the options \"descriptor\" and "
                                  "\"schema_registry_url\""),
              std::string::npos);
    EXPECT_EQ(refusal({opt("descriptor", desc), opt("message", "shop.Order"),
                       opt("schema_registry_url", "http://r:8081")})
                  .first,
              "22023");
    EXPECT_EQ(refusal({opt("descriptor", desc), opt("message", "shop.Order"),
                       opt("schema_registry_user", "u")})
                  .first,
              "22023");
    EXPECT_EQ(refusal({opt("schema_registry_url", "http://r:8081"),
                       opt("schema_registry_password", "secret")})
                  .first,
              "22023");
    // The password is never quoted back.
    EXPECT_EQ(refusal({opt("schema_registry_url", "http://r:8081"),
                       opt("schema_registry_password", "secret")})
                  .second.find("secret"),
              std::string::npos);
    const auto not_b64 = refusal({opt("descriptor", "abc$def"), opt("message", "shop.Order")});
    EXPECT_EQ(not_b64.first, "22023");
    EXPECT_NE(not_b64.second.find("not base64"), std::string::npos);
    EXPECT_NE(not_b64.second.find("position 4"), std::string::npos);
    // A length that ends in the middle of a byte; text after the padding.
    EXPECT_EQ(refusal({opt("descriptor", desc.substr(0, 4 * 10 + 1)), opt("message", "x")}).first,
              "22023");
    EXPECT_NE(refusal({opt("descriptor", "QQ==QQ=="), opt("message", "x")}).second.find("padding"),
              std::string::npos);
    const auto not_set =
        refusal({opt("descriptor", base64("not a descriptor")), opt("message", "shop.Order")});
    EXPECT_EQ(not_set.first, "22023");
    EXPECT_NE(not_set.second.find("not a valid FileDescriptorSet"), std::string::npos);
    const auto no_message = refusal({opt("descriptor", desc)});
    EXPECT_EQ(no_message.first, "22023");
    EXPECT_NE(no_message.second.find("needs format option \"message\""), std::string::npos);
    const auto unknown = refusal({opt("descriptor", desc), opt("message", "Order")});
    EXPECT_EQ(unknown.first, "22023");
    EXPECT_NE(unknown.second.find("declares no message \"Order\""), std::string::npos);
    const auto option =
        refusal({opt("descriptor", desc), opt("message", "shop.Order"), opt("schema", "{}")});
    EXPECT_EQ(option.first, "22023");
    EXPECT_NE(option.second.find("unknown format option \"schema\""), std::string::npos);
    EXPECT_EQ(
        refusal({opt("descriptor", "12", FormatOption::Type::Other), opt("message", "shop.Order")})
            .first,
        "22023");
    EXPECT_EQ(refusal({opt("descriptor", desc), opt("message", "")}).first, "22023");
}

TEST(ProtobufFormat, ARegistrysOptions) {
    const RecordFormat f = stoatflow::format::parse_record_format(
        "protobuf", {opt("schema_registry_url", "http://r:8081"), opt("schema_registry_user", "u"),
                     opt("schema_registry_password", "p")});
    EXPECT_TRUE(f.proto.registry());
    EXPECT_EQ(f.proto.schema, nullptr);
    EXPECT_EQ(f.proto.message_name, "");
    EXPECT_EQ(f.proto.registry_user, "u");
    // Declared columns are read by each writer schema (no check at declaration).
    EXPECT_NO_THROW(stoatflow::format::check_schema_columns(f, {"x"}, {{"x"}}));
    // Without columns: the latest schema's message, named or the first one.
    EXPECT_EQ(stoatflow::format::proto_text_column_list(f.proto, kShopProtoText),
              "\"sku\" text, \"qty\" integer");
    RecordFormat named = stoatflow::format::parse_record_format(
        "protobuf", {opt("schema_registry_url", "http://r:8081"), opt("message", "shop.Order")});
    EXPECT_EQ(stoatflow::format::proto_text_column_list(named.proto, kShopProtoText),
              *stoatflow::format::schema_column_list(order_format()));
    named.proto.message_name = "shop.Nope";
    EXPECT_THROW(stoatflow::format::proto_text_column_list(named.proto, kShopProtoText), Error);
    EXPECT_THROW(stoatflow::format::proto_text_column_list(f.proto, "message {"), Error);
}

TEST(ProtobufFormat, ColumnsFromTheMessageFollowTheTypeMapping) {
    EXPECT_EQ(stoatflow::format::schema_column_list(order_format()),
              std::optional<std::string>(
                  "\"id\" text, \"amount_cents\" bigint, \"price\" double precision, "
                  "\"ratio\" real, \"paid\" boolean, \"blob\" bytea, \"status\" text, "
                  "\"ts\" timestamptz, \"customer\" jsonb, \"codes\" jsonb, \"lines\" jsonb, "
                  "\"tags\" jsonb, \"maybe\" integer, \"delta\" bigint, \"big\" numeric, "
                  "\"f32\" bigint, \"sf64\" bigint, \"names\" jsonb, \"note\" text, "
                  "\"code\" integer"));
    // The other formats keep 0.1's field paths (json) or need columns (csv).
    EXPECT_EQ(
        stoatflow::format::schema_column_list(stoatflow::format::parse_record_format("json", {})),
        std::nullopt);
    EXPECT_EQ(
        stoatflow::format::schema_column_list(stoatflow::format::parse_record_format("csv", {})),
        std::nullopt);
}

TEST(ProtobufFormat, DeclaredColumnsResolveAgainstTheMessage) {
    EXPECT_EQ(
        column_refusal({"id", "city", "ts"}, {{"id"}, {"customer", "address", "city"}, {"ts"}})
            .first,
        "accepted");
    const auto unknown = column_refusal({"id", "nope"}, {{"id"}, {"nope"}});
    EXPECT_EQ(unknown.first, "42703");
    EXPECT_EQ(unknown.second, "column \"nope\": message shop.Order has no field \"nope\"");
    const auto nested = column_refusal({"town"}, {{"customer", "address", "town"}});
    EXPECT_EQ(nested.first, "42703");
    EXPECT_EQ(nested.second, "column \"town\": message shop.Order.Address has no field \"town\"");
    // Through a repeated field, a scalar or a timestamp: the reader's refusal, 22023.
    EXPECT_EQ(column_refusal({"sku"}, {{"lines", "sku"}}).first, "22023");
    EXPECT_EQ(column_refusal({"x"}, {{"id", "x"}}).first, "22023");
    EXPECT_EQ(column_refusal({"s"}, {{"ts", "seconds"}}).first, "22023");
}

TEST(ProtobufFormat, TheSeamDecodesBodiesAndDeadLettersBrokenOnes) {
    const RecordFormat f = order_format();
    const std::vector<std::string> names{"id", "ts", "status", "city"};
    const std::vector<std::vector<std::string>> paths{
        {"id"}, {"ts"}, {"status"}, {"customer", "address", "city"}};
    auto dec = stoatflow::format::make_row_decoder(f, names, paths);
    RawRows rows(names.size());
    std::size_t row = rows.add_row();
    bool skip = true;
    ASSERT_EQ(dec->decode(kCase_full.data(), kCase_full.size(), true, rows, row, skip),
              DeadReason::None)
        << dec->detail();
    EXPECT_FALSE(skip);
    EXPECT_EQ(rows.get(row, 0).text, "o-1");
    EXPECT_EQ(rows.get(row, 1).text, "2026-11-30T10:00:00.123456Z");
    EXPECT_EQ(rows.get(row, 2).text, "SHIPPED");
    EXPECT_EQ(rows.get(row, 3).text, "Z\u00fcrich");
    row = rows.add_row();
    const std::string cut = kCase_full.substr(0, kCase_full.size() - 3);
    EXPECT_EQ(dec->decode(cut.data(), cut.size(), false, rows, row, skip), DeadReason::BadProtobuf);
    EXPECT_FALSE(dec->detail().empty());
    const std::string overflow("\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11);
    EXPECT_EQ(dec->decode(overflow.data(), overflow.size(), false, rows, row, skip),
              DeadReason::BadProtobuf);
    // An empty body is a message with every field absent (a fresh row: the record path drops
    // a dead letter's).
    row = rows.add_row();
    EXPECT_EQ(dec->decode("", 0, false, rows, row, skip), DeadReason::None);
    EXPECT_EQ(rows.get(row, 2).text, "STATUS_UNKNOWN");
    EXPECT_EQ(rows.get(row, 3).kind, RawKind::Absent);
}

}  // namespace
