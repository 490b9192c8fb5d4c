#!/usr/bin/python3
# Writes the seed corpus of the Avro fuzzer (test/fuzz/avro_corpus) with Debian's python3-avro:
# a selector byte (the built-in schema of avro_fuzz_check.hpp, or 5: a schema in JSON, NUL,
# then the body) followed by bodies written by Apache Avro's Python implementation, plus a few
# malformed bodies by hand.
import datetime
import decimal
import io
import json
import os

import avro.io
import avro.schema

here = os.path.dirname(os.path.abspath(__file__))
out_dir = os.path.join(here, "avro_corpus")
os.makedirs(out_dir, exist_ok=True)

# The built-in schemas, as in avro_fuzz_check.hpp.
S0 = {"type": "record", "name": "C", "namespace": "shop", "fields": [
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["VIEW", "BUY"]}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": ["null", "long", "bytes"]}},
    {"name": "user", "type": {"type": "record", "name": "User", "fields": [
        {"name": "id", "type": "string"},
        {"name": "geo", "type": ["null", {"type": "record", "name": "Geo", "fields": [
            {"name": "lat", "type": "double"}, {"name": "f", "type": "float"}]}]}]}},
    {"name": "note", "type": ["null", "string"]}]}
S1 = {"type": "record", "name": "P", "fields": [
    {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"},
    {"name": "l", "type": "long"}, {"name": "f", "type": "float"},
    {"name": "d", "type": "double"}, {"name": "s", "type": "string"},
    {"name": "y", "type": "bytes"}, {"name": "n", "type": "null"}]}
S2 = {"type": "record", "name": "L", "fields": [
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 300, "scale": 7}},
    {"name": "fix", "type": {"type": "fixed", "name": "F8", "size": 8, "logicalType": "decimal",
                             "precision": 18, "scale": 3}},
    {"name": "tms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tus", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "all", "type": {"type": "array", "items": {"type": "long", "logicalType": "timestamp-micros"}}}]}
S3 = {"type": "record", "name": "Node", "fields": [
    {"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]}]}
S4 = {"type": "record", "name": "E", "fields": [
    {"name": "a", "type": "int"}, {"name": "b", "type": "bytes"},
    {"name": "gone", "type": {"type": "array", "items": "long"}},
    {"name": "k", "type": {"type": "enum", "name": "K", "symbols": ["X", "Y", "Z"]}},
    {"name": "s", "type": "string"}]}

utc = datetime.timezone.utc
CASES = [
    ("shop_basic", 0, S0, {"kind": "BUY", "tags": ["a", "b\"c"], "attrs": {"x": 1, "y": None, "z": b"\x00"},
                           "user": {"id": "u1", "geo": {"lat": 52.5, "f": -0.25}}, "note": "n\u00e9"}),
    ("shop_nulls", 0, S0, {"kind": "VIEW", "tags": [], "attrs": {}, "user": {"id": "", "geo": None},
                           "note": None}),
    ("primitives", 1, S1, {"b": True, "i": -2147483648, "l": 9223372036854775807, "f": 0.1,
                           "d": float("nan"), "s": "h\u00e9llo", "y": b"\x00\xff", "n": None}),
    ("primitives_inf", 1, S1, {"b": False, "i": 0, "l": -1, "f": float("-inf"), "d": 1e308,
                               "s": "", "y": b"", "n": None}),
    ("logical", 2, S2, {"dec": decimal.Decimal("-123.4567890"), "fix": decimal.Decimal("0.005"),
                        "tms": datetime.datetime(2026, 11, 30, 10, 0, 0, 123000, tzinfo=utc),
                        "tus": datetime.datetime(1, 1, 1, 0, 0, 0, 1, tzinfo=utc),
                        "day": datetime.date(9999, 12, 31),
                        "all": [datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=utc)]}),
    ("list", 3, S3, {"v": 1, "next": {"v": 2, "next": {"v": 3, "next": {"v": 4, "next": None}}}}),
    ("resolution", 4, S4, {"a": 7, "b": b"hi", "gone": [1, 2, 3], "k": "Z", "s": "\u00e9t\u00e9"}),
    ("resolution_y", 4, S4, {"a": -7, "b": b"", "gone": [], "k": "Y", "s": ""}),
]

INLINE = [
    ("inline_union_root", ["null", "int", "string", {"type": "array", "items": "float"}], 3, [1.5, 2.0]),
    ("inline_map_root", {"type": "map", "values": {"type": "fixed", "name": "F2", "size": 2}}, None,
     {"a": b"\x01\x02"}),
    ("inline_record", {"type": "record", "name": "R", "namespace": "x.y", "fields": [
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
        {"name": "r", "type": "x.y.E"},
        {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "R"}}}]}, None,
     {"e": "B", "r": "A", "m": {"k": [{"e": "A", "r": "B", "m": {}}]}}),
]


def encode(schema_json, datum):
    schema = avro.schema.parse(json.dumps(schema_json))
    buf = io.BytesIO()
    avro.io.DatumWriter(schema).write(datum, avro.io.BinaryEncoder(buf))
    return buf.getvalue()


def write(name, data):
    with open(os.path.join(out_dir, name + ".bin"), "wb") as f:
        f.write(data)


for name, sel, schema, datum in CASES:
    write(name, bytes([sel]) + encode(schema, datum))
for name, schema, _branch, datum in INLINE:
    write(name, bytes([5]) + json.dumps(schema).encode() + b"\0" + encode(schema, datum))
# By hand: a truncated body, a varint beyond 64 bits, a negative length, a union index out of
# range, 2^62 nulls, and a Confluent frame.
write("bad_truncated", bytes([1, 1]) + b"\xff\xff")
write("bad_varint", bytes([1, 1, 0]) + b"\xff" * 11)
write("bad_negative_length", bytes([0, 2, 0, 0, 1]))
write("bad_union_index", bytes([3, 2, 4]))
write("bad_many_nulls", bytes([5]) + b'{"type":"array","items":"null"}\0' + b"\x80" * 9 + b"\x01\x00")
write("confluent_frame", bytes([0, 0, 0, 1, 0x2c, 0x0e]))
