// The .proto parser (protobuf_text.cpp): shop.proto's text read into the same schema as the
// descriptor set protoc wrote from it (protobuf_fixtures.inc), the same records decoded through
// both, the parts of the language a registry's schemas use, and refusals that name the line.
#include "stoatflow/format/protobuf.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

#include "protobuf_fixtures.inc"

using stoatflow::format::DeadReason;
using stoatflow::format::ProtoFile;
using stoatflow::format::ProtoMessage;
using stoatflow::format::ProtoRowExtractor;
using stoatflow::format::ProtoSchema;
using stoatflow::format::ProtoSchemaError;
using stoatflow::format::ProtoType;
using stoatflow::format::RawRows;

std::shared_ptr<const ProtoSchema> from_text(const std::vector<ProtoFile>& files) {
    return ProtoSchema::parse(stoatflow::format::proto_text_descriptor_set(files));
}

std::shared_ptr<const ProtoSchema> one(const std::string& text) {
    return from_text({{"x.proto", text}});
}

std::string refusal(const std::vector<ProtoFile>& files) {
    try {
        from_text(files);
    } catch (const ProtoSchemaError& e) {
        return e.what();
    }
    return "accepted";
}

std::string refusal(const std::string& text) { return refusal({{"x.proto", text}}); }

// A field as the reader sees it, in one line.
std::string describe(const ProtoMessage& m) {
    std::string out = m.full_name + (m.map_entry ? " (map entry)" : "") +
                      (m.timestamp ? " (timestamp)" : "") + ":";
    for (const auto& f : m.fields) {
        out += " " + f.name + "=" + std::to_string(f.number) + "/" +
               std::to_string(static_cast<int>(f.type)) + (f.repeated ? "r" : "") +
               (f.presence ? "p" : "");
        if (f.message) out += "->" + f.message->full_name;
        if (f.enumeration) {
            out += "->" + f.enumeration->full_name + "{";
            for (const auto& [n, name] : f.enumeration->names)
                out += std::to_string(n) + ":" + name + ",";
            out += "}" + f.enumeration->first_name;
        }
    }
    return out;
}

TEST(ProtoText, ShopProtoReadsAsProtocWroteIt) {
    auto reference = ProtoSchema::parse(kShopDescriptorSet);
    auto text = from_text({{"shop.proto", kShopProtoText}});
    const auto names = reference->message_names();
    ASSERT_EQ(text->message_names().size(), names.size());
    for (const std::string& name : names) {
        ASSERT_NE(text->message(name), nullptr) << name;
        EXPECT_EQ(describe(*text->message(name)), describe(*reference->message(name)));
    }
    for (const std::vector<std::int32_t>& at :
         std::vector<std::vector<std::int32_t>>{{}, {1}, {1, 1}, {2}}) {
        ASSERT_NE(text->message_at(at), nullptr);
        EXPECT_EQ(text->message_at(at)->full_name, reference->message_at(at)->full_name);
    }
}

TEST(ProtoText, TheSameRecordsDecodeTheSameThroughBoth) {
    const std::vector<std::vector<std::string>> paths{
        {"id"},       {"amount_cents"}, {"price"},
        {"ratio"},    {"paid"},         {"blob"},
        {"status"},   {"ts"},           {"customer", "address", "city"},
        {"customer"}, {"codes"},        {"lines"},
        {"tags"},     {"maybe"},        {"delta"},
        {"big"},      {"f32"},          {"sf64"},
        {"names"},    {"note"},         {"code"}};
    auto reference = ProtoSchema::parse(kShopDescriptorSet);
    auto text = from_text({{"shop.proto", kShopProtoText}});
    ProtoRowExtractor a(reference, *reference->message("shop.Order"), paths);
    ProtoRowExtractor b(text, *text->message("shop.Order"), paths);
    for (const std::string* body :
         {&kCase_full, &kCase_empty, &kCase_special, &kCase_customer_no_address}) {
        RawRows ra(paths.size()), rb(paths.size());
        const auto row_a = ra.add_row(), row_b = rb.add_row();
        ASSERT_EQ(a.extract(body->data(), body->size(), ra, row_a), DeadReason::None);
        ASSERT_EQ(b.extract(body->data(), body->size(), rb, row_b), DeadReason::None);
        for (std::size_t c = 0; c < paths.size(); ++c) {
            EXPECT_EQ(ra.get(row_a, c).kind, rb.get(row_b, c).kind) << c;
            EXPECT_EQ(ra.get(row_a, c).text, rb.get(row_b, c).text) << c;
        }
    }
}

TEST(ProtoText, TheLanguageARegistrysSchemasUse) {
    auto s = one(R"(
        // a comment /* not nested */
        syntax = "proto2";  /* a block
                               comment */
        package a.b;
        option java_package = "x.y";
        option (custom) = { k: 1 nested { v: "}" } };
        import public "google/protobuf/timestamp.proto";
        enum Level { option allow_alias = true; LOW = -1; MID = 0x10; ALSO_MID = 020; HIGH = 3 [deprecated = true]; }
        message Outer {
          message Inner { optional int32 v = 1; }
          enum Level { INNER_LEVEL = 7; }
          required string id = 1 [default = "x", json_name = "ID"];
          optional Level level = 2;          // the inner Level: the innermost scope wins
          optional .a.b.Level outer_level = 3;
          repeated Inner inners = 4 [packed = false];
          map<string, Inner> by_name = 5;
          map<int64, b.Level> levels = 6;
          oneof choice { string s = 7; Outer.Inner n = 8; }
          optional group Extra = 9 { optional int32 e = 1; }
          optional google.protobuf.Timestamp at = 10;
          reserved 11 to 15, 20; reserved "old";
          extensions 100 to max;
          int32 no_label = 16;
        }
        extend Outer { optional int32 ext = 100; }
        service S { rpc Get (Outer) returns (Outer) { option idempotency_level = NO_SIDE_EFFECTS; } }
    )");
    const ProtoMessage* outer = s->message("a.b.Outer");
    ASSERT_NE(outer, nullptr);
    EXPECT_EQ(describe(*outer),
              "a.b.Outer: id=1/9 level=2/14p->a.b.Outer.Level{7:INNER_LEVEL,}INNER_LEVEL "
              "outer_level=3/14p->a.b.Level{-1:LOW,3:HIGH,16:MID,}LOW "
              "inners=4/11r->a.b.Outer.Inner by_name=5/11r->a.b.Outer.ByNameEntry "
              "levels=6/11r->a.b.Outer.LevelsEntry s=7/9p n=8/11p->a.b.Outer.Inner "
              "extra=9/10p->a.b.Outer.Extra at=10/11p->google.protobuf.Timestamp "
              "no_label=16/5p");
    EXPECT_EQ(describe(*s->message("a.b.Outer.ByNameEntry")),
              "a.b.Outer.ByNameEntry (map entry): key=1/9p value=2/11p->a.b.Outer.Inner");
    EXPECT_EQ(describe(*s->message("a.b.Outer.LevelsEntry")),
              "a.b.Outer.LevelsEntry (map entry): key=1/3p "
              "value=2/14p->a.b.Level{-1:LOW,3:HIGH,16:MID,}LOW");
    EXPECT_EQ(describe(*s->message("a.b.Outer.Extra")), "a.b.Outer.Extra: e=1/5p");
    // proto3: no label is no presence; `optional` is.
    auto p3 = one("syntax = 'proto3'; message M { int32 a = 1; optional int32 b = 2; repeated "
                  "int32 c = 3; }");
    EXPECT_EQ(describe(*p3->message("M")), "M: a=1/5 b=2/5p c=3/5r");
}

TEST(ProtoText, ImportsResolveAmongTheGivenFiles) {
    auto s = from_text(
        {{"common/money.proto",
          "syntax = \"proto3\"; package common; message Money { int64 cents = 1; "
          "string currency = 2; }"},
         {"shop/order.proto", "syntax = \"proto3\"; package shop; import \"common/money.proto\";\n"
                              "message Order { common.Money total = 1; }\nmessage Other {}"}});
    EXPECT_EQ(describe(*s->message("shop.Order")), "shop.Order: total=1/11->common.Money");
    // The main file is the last: Confluent's message indexes count its messages.
    EXPECT_EQ(s->message_at({})->full_name, "shop.Order");
    EXPECT_EQ(s->message_at({1})->full_name, "shop.Other");
    EXPECT_EQ(refusal({{"shop/order.proto", "syntax = \"proto3\"; import \"common/money.proto\";"
                                            " message Order { common.Money total = 1; }"}}),
              "shop/order.proto imports common/money.proto, which is not given (only "
              "google/protobuf/timestamp.proto is known without its text)");
}

TEST(ProtoText, RefusesNamingTheFileLineAndColumn) {
    EXPECT_EQ(refusal("syntax = \"proto3\";\nmessage M {\n  Nope n = 1;\n}"),
              "x.proto:3:3: field n names the type Nope, which is not declared");
    EXPECT_EQ(refusal("syntax = \"proto4\";"),
              "x.proto:1:10: syntax \"proto4\" (stoatflow reads proto2 and proto3)");
    EXPECT_EQ(refusal("message M { int32 a = 0; }"),
              "x.proto:1:24: a field number out of range (1 to 2^29-1)");
    EXPECT_EQ(refusal("message M { int32 a = 1 }"),
              "x.proto:1:25: expected \";\" after the field, found \"}\"");
    EXPECT_EQ(refusal("message M { int32 a = 1;"), "x.proto:1:25: message M does not end");
    EXPECT_EQ(refusal("/* open"), "x.proto:1:1: a comment that does not end");
    EXPECT_EQ(refusal("message M { string s = 1 [default = \"x]; }"),
              "x.proto:1:37: a string that does not end");
    EXPECT_EQ(refusal("message M {} message M {}"), "x.proto: M is declared twice");
    EXPECT_EQ(refusal("message M { map<float, int32> m = 1; }"),
              "x.proto:1:17: a map key that is not an integer, bool or string type");
    EXPECT_EQ(refusal("enum E {}"), "x.proto:1:9: enum E has no values");
    EXPECT_EQ(refusal("message M { int32 a = 99999999999; }"),
              "x.proto:1:23: a field number out of range");
    EXPECT_EQ(refusal("foo bar;"),
              "x.proto:1:1: expected a message, an enum or a file statement, found \"foo\"");
    // Nesting is bounded (kMaxProtoDepth): no recursion without end on hostile text.
    std::string deep;
    for (int i = 0; i < 150; ++i) deep += "message M" + std::to_string(i) + " { ";
    EXPECT_EQ(refusal(deep).substr(0, 9), "x.proto:1");
    EXPECT_NE(refusal(deep).find("nested deeper than 100"), std::string::npos);
    EXPECT_NE(refusal(std::string(100000, '{')), "accepted");
}

}  // namespace
