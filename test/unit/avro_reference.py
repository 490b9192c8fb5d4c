#!/usr/bin/python3
# Writes the reference Avro bodies of test/unit/avro_test.cpp with Debian's python3-avro (the
# Apache Avro Python implementation), so the C++ decoder is checked against bytes it did not
# write. Run: /usr/bin/python3 test/unit/avro_reference.py  (prints one hex line per case).
import datetime
import decimal
import io
import json

import avro.io
import avro.schema

CASES = [
    ("primitives",
     {"type": "record", "name": "P", "fields": [
         {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"},
         {"name": "l", "type": "long"}, {"name": "f", "type": "float"},
         {"name": "d", "type": "double"}, {"name": "s", "type": "string"},
         {"name": "y", "type": "bytes"}, {"name": "n", "type": "null"}]},
     {"b": True, "i": -2147483648, "l": 9223372036854775807, "f": 0.1, "d": -2.5e-300,
      "s": "h\u00e9\"llo", "y": b"\x00\xff\x10", "n": None}),
    ("logical",
     {"type": "record", "name": "L", "fields": [
         {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
         {"name": "fix", "type": {"type": "fixed", "name": "F8", "size": 8, "logicalType": "decimal", "precision": 18, "scale": 3}},
         {"name": "tms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
         {"name": "tus", "type": {"type": "long", "logicalType": "timestamp-micros"}},
         {"name": "old", "type": {"type": "long", "logicalType": "timestamp-micros"}},
         {"name": "day", "type": {"type": "int", "logicalType": "date"}},
         {"name": "id", "type": {"type": "string", "logicalType": "uuid"}}]},
     {"dec": decimal.Decimal("-123.45"), "fix": decimal.Decimal("0.005"),
      "tms": datetime.datetime(2026, 11, 30, 10, 0, 0, 123000, tzinfo=datetime.timezone.utc),
      "tus": datetime.datetime(2026, 11, 30, 10, 0, 0, 123456, tzinfo=datetime.timezone.utc),
      "old": datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=datetime.timezone.utc),
      "day": datetime.date(2026, 11, 30),
      "id": "123e4567-e89b-12d3-a456-426614174000"}),
    ("complex",
     {"type": "record", "name": "C", "namespace": "shop", "fields": [
         {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["VIEW", "BUY"]}},
         {"name": "tags", "type": {"type": "array", "items": "string"}},
         {"name": "attrs", "type": {"type": "map", "values": "long"}},
         {"name": "user", "type": {"type": "record", "name": "User", "fields": [
             {"name": "id", "type": "string"},
             {"name": "geo", "type": ["null", {"type": "record", "name": "Geo", "fields": [
                 {"name": "lat", "type": "double"}]}]}]}},
         {"name": "note", "type": ["null", "string"]},
         {"name": "again", "type": "Kind"}]},
     {"kind": "BUY", "tags": ["a", "b\"c"], "attrs": {"x": 1, "y": -2},
      "user": {"id": "u1", "geo": {"lat": 52.5}}, "note": None, "again": "VIEW"}),
    ("v1",
     {"type": "record", "name": "E", "fields": [
         {"name": "a", "type": "int"}, {"name": "b", "type": "bytes"},
         {"name": "gone", "type": {"type": "array", "items": "long"}},
         {"name": "k", "type": {"type": "enum", "name": "K", "symbols": ["X", "Y", "Z"]}},
         {"name": "s", "type": "string"}]},
     {"a": 7, "b": b"hi", "gone": [1, 2, 3], "k": "Z", "s": "\u00e9t\u00e9"}),
]


def encode(schema_json, datum):
    schema = avro.schema.parse(json.dumps(schema_json))
    out = io.BytesIO()
    avro.io.DatumWriter(schema).write(datum, avro.io.BinaryEncoder(out))
    return out.getvalue()


for name, schema_json, datum in CASES:
    print(name, encode(schema_json, datum).hex())
