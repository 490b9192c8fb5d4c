// The protobuf reader (include/stoatflow/format/protobuf.hpp) against messages Google's own
// library encoded (protobuf_reference/gen.py writes protobuf_fixtures.inc), and against bytes
// built by hand to break it.
#include "stoatflow/format/protobuf.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

#include "protobuf_fixtures.inc"

using stoatflow::format::ConfluentProto;
using stoatflow::format::DeadReason;
using stoatflow::format::ProtoRowExtractor;
using stoatflow::format::ProtoSchema;
using stoatflow::format::ProtoSchemaError;
using stoatflow::format::RawKind;
using stoatflow::format::RawRows;

std::shared_ptr<const ProtoSchema> shop() { return ProtoSchema::parse(kShopDescriptorSet); }

std::vector<std::string> split(const std::string& path) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (;;) {
        const auto dot = path.find('.', start);
        out.push_back(path.substr(start, dot - start));
        if (dot == std::string::npos) return out;
        start = dot + 1;
    }
}

struct Read {
    DeadReason reason = DeadReason::None;
    std::string detail;
    std::vector<std::pair<RawKind, std::string>> cols;
};

Read read(const std::string& message, const std::vector<std::string>& paths,
          const std::string& body) {
    auto schema = shop();
    std::vector<std::vector<std::string>> p;
    for (const auto& s : paths) p.push_back(split(s));
    ProtoRowExtractor x(schema, *schema->message(message), p);
    RawRows rows(paths.size());
    const std::size_t row = rows.add_row();
    Read r;
    r.reason = x.extract(body.data(), body.size(), rows, row);
    r.detail = x.detail();
    for (std::size_t c = 0; c < paths.size(); ++c) {
        const auto v = rows.get(row, c);
        r.cols.emplace_back(v.kind, std::string(v.text));
    }
    return r;
}

TEST(ProtoSchema, ReadsTheDescriptorSetProtocWrote) {
    auto s = shop();
    const auto* order = s->message("shop.Order");
    ASSERT_NE(order, nullptr);
    EXPECT_EQ(s->message(".shop.Order"), order);
    EXPECT_NE(s->message("shop.Order.Customer"), nullptr);
    EXPECT_NE(s->message("google.protobuf.Timestamp"), nullptr);
    EXPECT_TRUE(s->message("google.protobuf.Timestamp")->timestamp);
    EXPECT_EQ(s->message("shop.Nope"), nullptr);
    const auto* maybe = order->field("maybe");
    ASSERT_NE(maybe, nullptr);
    EXPECT_TRUE(maybe->presence);                 // proto3 optional
    EXPECT_TRUE(order->field("note")->presence);  // oneof member
    EXPECT_FALSE(order->field("amount_cents")->presence);
    EXPECT_TRUE(order->field("tags")->repeated);
    EXPECT_TRUE(order->field("tags")->message->map_entry);
    EXPECT_EQ(order->field("status")->enumeration->names.at(2), "SHIPPED");
    EXPECT_EQ(order->field("customer")->message->field("address")->message->full_name,
              "shop.Order.Address");
    // The main file is shop.proto (the last one): its first message is Line, then Order, Tree;
    // Order's nested types are Address, Customer.
    EXPECT_EQ(s->message_at({})->full_name, "shop.Line");
    EXPECT_EQ(s->message_at({1})->full_name, "shop.Order");
    EXPECT_EQ(s->message_at({1, 1})->full_name, "shop.Order.Customer");
    EXPECT_EQ(s->message_at({3}), nullptr);
    EXPECT_EQ(s->message_at({1, 5}), nullptr);
}

TEST(ProtoSchema, RefusesWhatIsNotADescriptorSet) {
    EXPECT_THROW(ProtoSchema::parse(""), ProtoSchemaError);
    EXPECT_THROW(ProtoSchema::parse("not a descriptor"), ProtoSchemaError);
    EXPECT_THROW(ProtoSchema::parse(kShopDescriptorSet.substr(0, kShopDescriptorSet.size() - 7)),
                 ProtoSchemaError);
    // A set without google/protobuf/timestamp.proto still knows Timestamp; a set without the
    // file of another type a field names is refused, naming the field.
    // (shop.proto is the set's second file: dropping the first leaves Order's ts resolvable.)
    std::size_t len = 0, i = 1;
    for (int shift = 0;; ++i, shift += 7) {
        const auto b = static_cast<unsigned char>(kShopDescriptorSet[i]);
        len |= static_cast<std::size_t>(b & 0x7f) << shift;
        if ((b & 0x80) == 0) break;
    }
    const std::string first_file_dropped = kShopDescriptorSet.substr(i + 1 + len);
    auto s = ProtoSchema::parse(first_file_dropped);
    EXPECT_NE(s->message("shop.Order")->field("ts")->message, nullptr);
    EXPECT_TRUE(s->message("shop.Order")->field("ts")->message->timestamp);
}

TEST(ProtoRowExtractor, EveryTypeOfAFullMessage) {
    const Read r = read("shop.Order",
                        {"id",    "amount_cents", "price", "ratio",         "paid",
                         "blob",  "status",       "ts",    "customer.name", "customer.address.city",
                         "codes", "lines",        "tags",  "maybe",         "delta",
                         "big",   "f32",          "sf64",  "names",         "note",
                         "code",  "customer"},
                        kCase_full);
    ASSERT_EQ(r.reason, DeadReason::None) << r.detail;
    const std::vector<std::pair<RawKind, std::string>> want = {
        {RawKind::String, "o-1"},
        {RawKind::Number, "123456789012"},
        {RawKind::Number, "12.5"},
        {RawKind::Number, "0.1"},  // the float 0.1f, written as the shortest text that reads back
        {RawKind::True, ""},
        {RawKind::String, "\\x00ff41"},
        {RawKind::String, "SHIPPED"},
        {RawKind::String, "2026-11-30T10:00:00.123456Z"},
        {RawKind::String, "Ada \xc3\xa9"},
        {RawKind::String, "Z\xc3\xbcrich"},
        {RawKind::Array, "[1, -2, 300]"},
        {RawKind::Array, R"([{"sku": "a", "qty": 2}, {"sku": "b\"q"}])"},
        {RawKind::Object, R"({"x": 1, "y": -2})"},
        {RawKind::Number, "0"},  // optional, set to 0: present
        {RawKind::Number, "-7"},
        {RawKind::Number, "18446744073709551615"},
        {RawKind::Number, "4294967295"},
        {RawKind::Number, "-9223372036854775808"},
        {RawKind::Array, R"(["p", "q"])"},
        {RawKind::String, "hi"},
        {RawKind::Absent, ""},  // the other member of the oneof
        {RawKind::Object, R"({"name": "Ada é", "address": {"city": "Zürich"}})"},
    };
    ASSERT_EQ(r.cols.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(r.cols[i].first, want[i].first) << "column " << i;
        if (want[i].first != RawKind::True && want[i].first != RawKind::Absent) {
            EXPECT_EQ(r.cols[i].second, want[i].second) << "column " << i;
        }
    }
}

TEST(ProtoRowExtractor, AbsentFieldsReadAsProto3Does) {
    const Read r = read("shop.Order",
                        {"id", "amount_cents", "paid", "blob", "status", "ts", "customer.name",
                         "codes", "tags", "maybe", "customer"},
                        kCase_empty);
    ASSERT_EQ(r.reason, DeadReason::None) << r.detail;
    EXPECT_EQ(r.cols[0], std::make_pair(RawKind::String, std::string()));
    EXPECT_EQ(r.cols[1], std::make_pair(RawKind::Number, std::string("0")));
    EXPECT_EQ(r.cols[2].first, RawKind::False);
    EXPECT_EQ(r.cols[3], std::make_pair(RawKind::String, std::string("\\x")));
    EXPECT_EQ(r.cols[4], std::make_pair(RawKind::String, std::string("STATUS_UNKNOWN")));
    EXPECT_EQ(r.cols[5].first, RawKind::Absent);  // a message field not there: NULL
    EXPECT_EQ(r.cols[6].first, RawKind::Absent);  // inside a message that is not there
    EXPECT_EQ(r.cols[7], std::make_pair(RawKind::Array, std::string("[]")));
    EXPECT_EQ(r.cols[8], std::make_pair(RawKind::Object, std::string("{}")));
    EXPECT_EQ(r.cols[9].first, RawKind::Absent);  // optional: presence
    EXPECT_EQ(r.cols[10].first, RawKind::Absent);
}

TEST(ProtoRowExtractor, NonFiniteNumbersTimesBefore1970AndOneofs) {
    const Read r =
        read("shop.Order", {"price", "ratio", "ts", "code", "note", "customer.address.city"},
             kCase_special);
    ASSERT_EQ(r.reason, DeadReason::None) << r.detail;
    EXPECT_EQ(r.cols[0], std::make_pair(RawKind::String, std::string("NaN")));
    EXPECT_EQ(r.cols[1], std::make_pair(RawKind::String, std::string("-Infinity")));
    EXPECT_EQ(r.cols[2], std::make_pair(RawKind::String, std::string("1969-12-31T23:59:59.5Z")));
    EXPECT_EQ(r.cols[3], std::make_pair(RawKind::Number, std::string("5")));
    EXPECT_EQ(r.cols[4].first, RawKind::Absent);
    EXPECT_EQ(r.cols[5].first, RawKind::Absent);
}

TEST(ProtoRowExtractor, AMessageThereWithoutItsInnerMessage) {
    const Read r =
        read("shop.Order", {"customer.name", "customer.address.city", "customer.address"},
             kCase_customer_no_address);
    ASSERT_EQ(r.reason, DeadReason::None) << r.detail;
    EXPECT_EQ(r.cols[0], std::make_pair(RawKind::String, std::string("only name")));
    EXPECT_EQ(r.cols[1].first, RawKind::Absent);
    EXPECT_EQ(r.cols[2].first, RawKind::Absent);
}

TEST(ProtoRowExtractor, NestingIsBoundedWhereItIsRead) {
    // 150 levels: a path to the top-level value skips the rest without descending; the whole
    // tree as JSON is deeper than the limit: a dead letter, not a stack overflow.
    Read r = read("shop.Tree", {"v"}, kCase_deep);
    ASSERT_EQ(r.reason, DeadReason::None) << r.detail;
    EXPECT_EQ(r.cols[0].second, "0");
    r = read("shop.Tree", {"child"}, kCase_deep);
    EXPECT_EQ(r.reason, DeadReason::BadProtobuf);
    EXPECT_NE(r.detail.find("deeper"), std::string::npos) << r.detail;
    r = read("shop.Tree", {"child.child.v", "child"}, kCase_tree3);
    ASSERT_EQ(r.reason, DeadReason::None) << r.detail;
    EXPECT_EQ(r.cols[0].second, "3");
    EXPECT_EQ(r.cols[1].second, R"({"child": {"v": 3}, "v": 2})");
}

TEST(ProtoRowExtractor, LastValueWinsAndUnknownFieldsAreSkipped) {
    // id = "a", an unknown varint field 99, an unknown group 98 holding a field, id = "b",
    // amount_cents sent as a string (wire type 2: skipped as unknown, as libprotobuf does).
    std::string body = "\x0a\x01"
                       "a";
    body += "\x98\x06\x07";              // field 99, varint 7
    body += "\x93\x06\x08\x01\x94\x06";  // field 98 start group, field 1 varint 1, end group
    body += "\x0a\x01"
            "b";
    body += "\x12\x01x";  // field 2 (int64) as length-delimited
    const Read r = read("shop.Order", {"id", "amount_cents"}, body);
    ASSERT_EQ(r.reason, DeadReason::None) << r.detail;
    EXPECT_EQ(r.cols[0].second, "b");
    EXPECT_EQ(r.cols[1], std::make_pair(RawKind::Number, std::string("0")));
}

TEST(ProtoRowExtractor, UnpackedRepeatedAndUnknownEnumNumbers) {
    // codes as two unpacked varints and one packed run; status = 9 (no name in this schema).
    std::string body = "\x50\x01\x50\x02";
    body += "\x52\x02\x03\x04";
    body += "\x38\x09";
    const Read r = read("shop.Order", {"codes", "status"}, body);
    ASSERT_EQ(r.reason, DeadReason::None) << r.detail;
    EXPECT_EQ(r.cols[0].second, "[1, 2, 3, 4]");
    EXPECT_EQ(r.cols[1], std::make_pair(RawKind::String, std::string("9")));
}

TEST(ProtoRowExtractor, BrokenBodiesAreBadProtobuf) {
    const std::vector<std::pair<const char*, std::string>> broken = {
        {"truncated varint", std::string("\x10\xff", 2)},
        {"length past the end", std::string("\x0a\x05"
                                            "ab",
                                            4)},
        {"wire type 6", std::string("\x0e\x00", 2)},
        {"wire type 7", std::string("\x0f\x00", 2)},
        {"field number 0", std::string("\x00\x01", 2)},
        {"11-byte varint", std::string("\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12)},
        {"end group without start", std::string("\x0c", 1)},
        {"unterminated group", std::string("\x93\x06\x08\x01", 4)},
        {"invalid UTF-8 string", std::string("\x0a\x02\xc3\x28", 4)},
        {"length 2^62", std::string("\x0a\x80\x80\x80\x80\x80\x80\x80\x80\x40", 10)},
        {"timestamp out of range",
         std::string("\x42\x0a\x08\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 12)},
    };
    for (const auto& [what, body] : broken) {
        const Read r = read("shop.Order", {"id", "amount_cents", "ts"}, body);
        EXPECT_EQ(r.reason, DeadReason::BadProtobuf) << what;
        EXPECT_FALSE(r.detail.empty()) << what;
    }
}

TEST(ProtoRowExtractor, PathsTheSchemaDoesNotHaveAreRefused) {
    auto s = shop();
    const auto* order = s->message("shop.Order");
    EXPECT_THROW(ProtoRowExtractor(s, *order, {{"nope"}}), ProtoSchemaError);
    EXPECT_THROW(ProtoRowExtractor(s, *order, {{"id", "x"}}),
                 ProtoSchemaError);  // through a string
    EXPECT_THROW(ProtoRowExtractor(s, *order, {{"lines", "sku"}}),
                 ProtoSchemaError);  // through a repeated
    EXPECT_THROW(ProtoRowExtractor(s, *order, {{"ts", "seconds"}}),
                 ProtoSchemaError);  // into a timestamp
    try {
        ProtoRowExtractor(s, *order, {{"customer", "nope"}});
        FAIL();
    } catch (const ProtoSchemaError& e) {
        EXPECT_NE(std::string(e.what()).find("customer.nope"), std::string::npos) << e.what();
    }
}

TEST(ConfluentProto, Framing) {
    ConfluentProto f;
    std::string detail;
    // magic, id 0x00000105, the single 0 byte for {0}, body
    std::string m("\x00\x00\x00\x01\x05\x00\x0a\x01z", 9);
    ASSERT_TRUE(stoatflow::format::split_confluent_proto(m, f, detail)) << detail;
    EXPECT_EQ(f.schema_id, 0x105u);
    EXPECT_EQ(f.indexes, std::vector<std::int32_t>{0});
    EXPECT_EQ(f.body, std::string("\x0a\x01z", 3));
    // {1, 0}: count 2, then 1 and 0, zigzag (2 -> 4, 1 -> 2, 0 -> 0)
    m = std::string("\x00\x00\x00\x00\x07\x04\x02\x00", 8);
    ASSERT_TRUE(stoatflow::format::split_confluent_proto(m, f, detail)) << detail;
    EXPECT_EQ(f.schema_id, 7u);
    EXPECT_EQ(f.indexes, (std::vector<std::int32_t>{1, 0}));
    EXPECT_TRUE(f.body.empty());
    EXPECT_FALSE(stoatflow::format::split_confluent_proto(
        std::string("\x01\x00\x00\x00\x07\x00", 6), f, detail));
    EXPECT_FALSE(
        stoatflow::format::split_confluent_proto(std::string("\x00\x00\x00", 3), f, detail));
    EXPECT_FALSE(stoatflow::format::split_confluent_proto(
        std::string("\x00\x00\x00\x00\x07\x06\x02", 7), f, detail));
    EXPECT_FALSE(stoatflow::format::split_confluent_proto(
        std::string("\x00\x00\x00\x00\x07\x01", 6), f, detail));  // count -1
}

}  // namespace

// The fuzzer's seeds and findings (test/fuzz/protobuf_corpus), read as the fuzzer reads them,
// in every ctest run: each gives a verdict.
#ifdef STOATFLOW_FUZZ_CORPUS
#include <dirent.h>

#include <fstream>
#include <sstream>

TEST(ProtoFuzzCorpus, EveryInputGivesAVerdict) {
    const std::string dir = std::string(STOATFLOW_FUZZ_CORPUS) + "/../protobuf_corpus";
    DIR* d = opendir(dir.c_str());
    ASSERT_NE(d, nullptr) << dir;
    std::size_t files = 0;
    auto schema = shop();
    std::vector<std::vector<std::string>> paths;
    for (const auto& f : schema->message("shop.Order")->fields) paths.push_back({f.name});
    ProtoRowExtractor x(schema, *schema->message("shop.Order"), paths);
    while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream in(dir + "/" + e->d_name, std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        const std::string input = ss.str();
        ++files;
        if (input.empty()) continue;
        const std::string rest = input.substr(1);
        RawRows rows(paths.size());
        const DeadReason r = x.extract(rest.data(), rest.size(), rows, rows.add_row());
        EXPECT_TRUE(r == DeadReason::None || r == DeadReason::BadProtobuf) << e->d_name;
        try {
            (void)ProtoSchema::parse(rest);
        } catch (const ProtoSchemaError&) {
        }
    }
    closedir(d);
    EXPECT_GE(files, 5u);
}
#endif
