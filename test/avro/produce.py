#!/usr/bin/python3
"""Writes Avro records to one Kafka partition with Apache Avro's Python implementation (Debian
python3-avro) and kcat: each line of stdin is one message, a JSON object (the record, written by
the schema given) or RAW:<hex> (the message's bytes as they are: hostile input). With --registry
DIR the schema is registered there under --subject (test/registry/mini_registry.py serves DIR)
and every record is Confluent-framed with its id; without, records are bare Avro bodies.
More writer schemas: --also FILE (each registered too); a line beginning @2: is written by the
first of them, @3: by the second, and so on. A line may carry a key: KEY:<text>|<record>; with
--key-schema the key is an Avro value of that schema, framed with its own id (subject
--key-subject).

  produce.py BROKERS TOPIC PARTITION SCHEMA_FILE [--also FILE ...] [--registry DIR --subject S]
             [--key-schema FILE --key-subject S]
"""
import argparse
import datetime
import decimal
import io
import json
import os
import subprocess
import sys
import tempfile

import avro.io
import avro.schema

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "registry"))
import mini_registry  # noqa: E402


def convert(schema, value):
    """JSON values into what the Python writer takes for logical types."""
    if value is None:
        return None
    if isinstance(schema, avro.schema.UnionSchema):
        for branch in schema.schemas:
            if branch.type != "null":
                return convert(branch, value)
        return value
    logical = getattr(schema, "logical_type", None) or schema.props.get("logicalType")
    if logical in ("timestamp-millis", "timestamp-micros") and isinstance(value, str):
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if logical == "date" and isinstance(value, str):
        return datetime.date.fromisoformat(value)
    if logical == "decimal" and not isinstance(value, decimal.Decimal):
        return decimal.Decimal(str(value))
    if isinstance(schema, avro.schema.RecordSchema) and isinstance(value, dict):
        return {f.name: convert(f.type, value.get(f.name)) for f in schema.fields if f.name in value}
    return value


def encode(schema, record):
    out = io.BytesIO()
    avro.io.DatumWriter(schema).write(convert(schema, record), avro.io.BinaryEncoder(out))
    return out.getvalue()


def frame(schema_id, body):
    return b"\0" + schema_id.to_bytes(4, "big") + body


def main():
    p = argparse.ArgumentParser()
    p.add_argument("brokers")
    p.add_argument("topic")
    p.add_argument("partition")
    p.add_argument("schema_file")
    p.add_argument("--also", action="append", default=[])
    p.add_argument("--registry")
    p.add_argument("--subject")
    p.add_argument("--key-schema")
    p.add_argument("--key-subject")
    a = p.parse_args()
    schemas, ids = [], []
    for path in [a.schema_file] + a.also:
        text = open(path).read()
        schemas.append(avro.schema.parse(text))
        ids.append(mini_registry.register(a.registry, a.subject, text) if a.registry else None)
    key_schema = key_id = None
    if a.key_schema:
        key_text = open(a.key_schema).read()
        key_schema = avro.schema.parse(key_text)
        key_id = mini_registry.register(a.registry, a.key_subject, key_text)
    with tempfile.TemporaryDirectory() as tmp:
        files, keys = [], []
        for n, line in enumerate(sys.stdin):
            line = line.rstrip("\n")
            if not line:
                continue
            key = None
            if line.startswith("KEY:"):
                key, line = line[4:].split("|", 1)
            which = 0
            if line.startswith("@"):
                n_text, line = line[1:].split(":", 1)
                which = int(n_text) - 1
            if line.startswith("RAW:"):
                data = bytes.fromhex(line[4:])
            else:
                data = encode(schemas[which], json.loads(line))
                if ids[which] is not None:
                    data = frame(ids[which], data)
            if key is not None and key_schema is not None:
                key = frame(key_id, encode(key_schema, json.loads(key)))
            path = os.path.join(tmp, "%08d" % n)
            with open(path, "wb") as f:
                f.write(data)
            files.append(path)
            keys.append(key)
        # One kcat per message when keys are given (kcat takes one key per run), else one run.
        base = ["kcat", "-P", "-q", "-b", a.brokers, "-t", a.topic, "-p", a.partition]
        if all(k is None for k in keys):
            if files:
                subprocess.run(base + files, check=True, stdout=subprocess.DEVNULL)
            return
        for path, key in zip(files, keys):
            if key is None:
                subprocess.run(base + [path], check=True, stdout=subprocess.DEVNULL)
            else:
                # One message per run: key, a key delimiter the key lacks, the value; the
                # message delimiter is a string the message lacks.
                raw = key if isinstance(key, bytes) else key.encode()
                delim = next(b for b in range(1, 256) if bytes([b]) not in raw)
                with open(path, "rb") as f:
                    value = f.read()
                message = raw + bytes([delim]) + value
                end = next(d for d in ("@@%d@@" % i for i in range(1000)) if d.encode() not in message)
                subprocess.run(base + ["-K", "\\x%02x" % delim, "-D", end],
                               input=message, check=True, stdout=subprocess.DEVNULL)

if __name__ == "__main__":
    main()
