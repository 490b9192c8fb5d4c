#!/usr/bin/env python3
"""Records for kcat -P in the formats a source reads (README "Formats"), written from JSON events
(one object per line, e.g. test/faults/events.py's chunk files) by the reference libraries:
Debian's python3-avro and python3-protobuf, not stoatflow's decoders.

  produce.py avro --schema ID=FILE [--schema ID=FILE ...] [--pick rr|seed:N] [--plain] EVENTS...
      Avro binary, Confluent-framed (byte 0, the schema id as 4 bytes big-endian, the body)
      unless --plain (the body only, for format_options->>'schema'). With several --schema, the
      writer schema of each record is picked round-robin (rr, default) or by a seeded random
      draw (seed:N). A field the event lacks takes the schema's default (a field without one
      is an error); event keys the schema lacks are not written.
  produce.py protobuf --message SPEC --id ID [--index-form short|long|mixed] [--plain] EVENTS...
      Protobuf binary, Confluent-framed (byte 0, the id, the message-index array: [0] as the
      single byte 0 (short) or as the count 1 and index 0, zigzag varints (long); mixed
      alternates) unless --plain (the body only, for format_options->>'descriptor').
  produce.py proto-schema SPEC --proto | --descriptor
      The message of SPEC as .proto text (to register, schemaType PROTOBUF) or as a base64
      FileDescriptorSet (format_options->>'descriptor').
      SPEC is a JSON file: {"package": "p", "message": "Event",
                            "fields": [["user_id", "string", 1], ["ts", "int64", 2], ...]}
  produce.py csv --columns a,b,c EVENTS...      RFC 4180 lines, NULL (missing) as an empty field
  produce.py delimiter                          the kcat -D argument that separates the records
  produce.py descriptor PROTO_FILE              the base64 FileDescriptorSet of a .proto file
                                                (protoc --include_imports; for 'descriptor')

Put on a topic directly (the pg_regress tests; one kcat run per partition, or per message when
keys are given), from JSON lines on stdin, one message each:
  produce.py kafka-avro BROKERS TOPIC PARTITION SCHEMA_FILE [--also FILE ...]
                        [--registry REG --subject S] [--key-schema FILE --key-subject S]
      Each line a record of SCHEMA_FILE (logical types as JSON: timestamps and dates as ISO
      8601 text, decimals as numbers), or RAW:<hex> (the message's bytes as they are: hostile
      input). @2:<record> is written by the first --also schema, @3: by the second, and so on.
      KEY:<text>|<record> gives the message a key: with --key-schema an Avro value of that
      schema (JSON), framed with its own id, else the text. With --registry each schema is
      registered (fake_registry.py's control door: its URL or its --dir) and every record is
      framed with its id; without, bare bodies.
  produce.py kafka-protobuf BROKERS TOPIC PARTITION PROTO_FILE MESSAGE [--registry REG --subject S]
      Each line a MESSAGE in proto3's JSON mapping (json_format.ParseDict), "deep": N for
      geo.region nested N levels (each geo.country set), or {"hex": "..."}: those bytes as they
      are. With --registry the .proto text is registered (PROTOBUF) and each message framed with
      its id and the message-index array, the short form 0 and the long form 1, 0 in turn.

Every record is followed by the delimiter (binary bodies hold line breaks): produce with
  kcat -P -D "$(produce.py delimiter)" ...      (csv and json: one record a line, no delimiter)
A body that happens to contain the delimiter is an error, never a silently split record.
EVENTS are files of JSON lines ("-" for stdin), read in order.
"""
import argparse
import base64
import csv
import datetime
import decimal
import io
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

DELIMITER = b"\xfeSFREC\xfe\x01"
DELIMITER_KCAT = "".join("\\x%02x" % b for b in DELIMITER)


def events(paths):
    for path in paths:
        f = sys.stdin if path == "-" else open(path, encoding="utf-8")
        with f:
            for line_no, line in enumerate(f, 1):
                line = line.strip()
                if line:
                    try:
                        yield json.loads(line)
                    except ValueError as e:
                        sys.exit("produce.py: %s:%d: %s" % (path, line_no, e))


def emit(out, record):
    if DELIMITER in record:
        sys.exit("produce.py: a record contains the delimiter %r; change the events" % DELIMITER)
    out.write(record)
    out.write(DELIMITER)


def frame(schema_id, body, indexes=b""):
    return b"\x00" + struct.pack(">I", schema_id) + indexes + body


# ---------------------------------------------------------------------------------------------
# Avro

def avro_writers(specs):
    import avro.io
    import avro.schema
    parse = getattr(avro.schema, "parse", None) or avro.schema.Parse
    writers = []
    for spec in specs:
        sid, _, path = spec.partition("=")
        if not sid.isdigit() or not path:
            sys.exit("produce.py: --schema wants ID=FILE, got %r" % spec)
        with open(path, encoding="utf-8") as f:
            schema = parse(f.read())
        writers.append((int(sid), schema, avro.io.DatumWriter(schema)))
    return writers


def avro_datum(schema, value):
    """A JSON value as the Python writer takes it for schema: a record's missing field takes its
    default (none: an error), keys the schema lacks are dropped, logical types from JSON text."""
    import avro.schema
    if value is None:
        return None
    if isinstance(schema, avro.schema.UnionSchema):
        for branch in schema.schemas:
            if branch.type != "null":
                return avro_datum(branch, value)
        return value
    logical = getattr(schema, "logical_type", None) or schema.props.get("logicalType")
    if logical in ("timestamp-millis", "timestamp-micros") and isinstance(value, str):
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if logical == "date" and isinstance(value, str):
        return datetime.date.fromisoformat(value)
    if logical == "decimal" and not isinstance(value, decimal.Decimal):
        return decimal.Decimal(str(value))
    if isinstance(schema, avro.schema.RecordSchema) and isinstance(value, dict):
        datum = {}
        for field in schema.fields:
            if field.name in value:
                datum[field.name] = avro_datum(field.type, value[field.name])
            elif field.has_default:
                datum[field.name] = field.default
            else:
                sys.exit("produce.py: the event %r lacks %r and the schema %s gives no default"
                         % (value, field.name, schema.name))
        return datum
    return value


def avro_body(schema, value):
    import avro.io
    buf = io.BytesIO()
    avro.io.DatumWriter(schema).write(avro_datum(schema, value), avro.io.BinaryEncoder(buf))
    return buf.getvalue()


def cmd_avro(args):
    import avro.io
    writers = avro_writers(args.schema)
    rng = random.Random(int(args.pick[5:])) if args.pick.startswith("seed:") else None
    out = sys.stdout.buffer
    for i, event in enumerate(events(args.events)):
        sid, schema, writer = writers[rng.randrange(len(writers)) if rng else i % len(writers)]
        buf = io.BytesIO()
        writer.write(avro_datum(schema, event), avro.io.BinaryEncoder(buf))
        emit(out, buf.getvalue() if args.plain else frame(sid, buf.getvalue()))


# ---------------------------------------------------------------------------------------------
# Protobuf

PROTO_TYPES = {  # SPEC type -> FieldDescriptorProto.Type name
    "double": "TYPE_DOUBLE", "float": "TYPE_FLOAT", "int64": "TYPE_INT64", "uint64": "TYPE_UINT64",
    "int32": "TYPE_INT32", "uint32": "TYPE_UINT32", "bool": "TYPE_BOOL", "string": "TYPE_STRING",
    "bytes": "TYPE_BYTES", "sint32": "TYPE_SINT32", "sint64": "TYPE_SINT64",
}


def load_spec(path):
    with open(path, encoding="utf-8") as f:
        spec = json.load(f)
    for name, kind, number in spec["fields"]:
        if kind not in PROTO_TYPES or not isinstance(number, int):
            sys.exit("produce.py: %s: field %r: type %r or number %r" % (path, name, kind, number))
    return spec


def file_descriptor(spec):
    from google.protobuf import descriptor_pb2
    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.name = spec.get("file", "stoatflow_test_event.proto")
    fdp.syntax = "proto3"
    if spec.get("package"):
        fdp.package = spec["package"]
    msg = fdp.message_type.add()
    msg.name = spec["message"]
    for name, kind, number in spec["fields"]:
        field = msg.field.add()
        field.name = name
        field.number = number
        field.type = descriptor_pb2.FieldDescriptorProto.Type.Value(PROTO_TYPES[kind])
        field.label = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
    return fdp


def proto_text(spec):
    lines = ['syntax = "proto3";']
    if spec.get("package"):
        lines.append("package %s;" % spec["package"])
    lines.append("")
    lines.append("message %s {" % spec["message"])
    for name, kind, number in spec["fields"]:
        lines.append("  %s %s = %d;" % (kind, name, number))
    lines.append("}")
    return "\n".join(lines) + "\n"


def proto_class(spec):
    from google.protobuf import descriptor_pool, message_factory
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_descriptor(spec))
    full = (spec["package"] + "." if spec.get("package") else "") + spec["message"]
    desc = pool.FindMessageTypeByName(full)
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(desc)
    return message_factory.MessageFactory(pool).GetPrototype(desc)


def descriptor_set(proto_file):
    """protoc's FileDescriptorSet (with imports) of a .proto file."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "set.desc")
        here, name = os.path.split(os.path.abspath(proto_file))
        subprocess.check_call(["protoc", "--include_imports", "--descriptor_set_out=" + out,
                               "-I", here, "-I", "/usr/include", os.path.join(here, name)])
        with open(out, "rb") as f:
            return f.read()


def message_class(desc, full_name):
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    pool = descriptor_pool.DescriptorPool()
    for f in descriptor_pb2.FileDescriptorSet.FromString(desc).file:
        pool.Add(f)
    found = pool.FindMessageTypeByName(full_name)
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(found)
    return message_factory.MessageFactory(pool).GetPrototype(found)


def zigzag_varint(n):
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def cmd_protobuf(args):
    spec = load_spec(args.message)
    cls = proto_class(spec)
    names = [f[0] for f in spec["fields"]]
    short, long_ = b"\x00", zigzag_varint(1) + zigzag_varint(0)
    out = sys.stdout.buffer
    for i, event in enumerate(events(args.events)):
        msg = cls()
        for name in names:
            if event.get(name) is not None:
                setattr(msg, name, event[name])
        body = msg.SerializeToString()
        if args.plain:
            emit(out, body)
            continue
        form = args.index_form if args.index_form != "mixed" else ("short", "long")[i % 2]
        emit(out, frame(args.id, body, short if form == "short" else long_))


def cmd_proto_schema(args):
    spec = load_spec(args.spec)
    if args.proto:
        sys.stdout.write(proto_text(spec))
    else:
        from google.protobuf import descriptor_pb2
        fds = descriptor_pb2.FileDescriptorSet()
        fds.file.append(file_descriptor(spec))
        print(base64.b64encode(fds.SerializeToString()).decode())


# ---------------------------------------------------------------------------------------------
# Straight onto a topic (the pg_regress tests)

def kcat_put(brokers, topic, partition, messages):
    """messages: (key or None, value bytes), in order, onto one partition."""
    base = ["kcat", "-P", "-q", "-b", brokers, "-t", topic, "-p", str(partition)]
    with tempfile.TemporaryDirectory() as tmp:
        if all(k is None for k, _ in messages):
            files = []
            for n, (_, value) in enumerate(messages):  # kcat: one message per file, in order
                files.append(os.path.join(tmp, "%08d" % n))
                with open(files[-1], "wb") as f:
                    f.write(value)
            if files:
                subprocess.run(base + files, check=True, stdout=subprocess.DEVNULL)
            return
    for key, value in messages:  # kcat takes one key per run: one message per run
        if key is None:
            with tempfile.NamedTemporaryFile() as f:
                f.write(value)
                f.flush()
                subprocess.run(base + [f.name], check=True, stdout=subprocess.DEVNULL)
            continue
        # Key, a key delimiter the key lacks, the value; a message delimiter the message lacks.
        delim = next(b for b in range(1, 256) if bytes([b]) not in key)
        message = key + bytes([delim]) + value
        end = next(d for d in ("@@%d@@" % i for i in range(1000)) if d.encode() not in message)
        subprocess.run(base + ["-K", "\\x%02x" % delim, "-D", end],
                       input=message, check=True, stdout=subprocess.DEVNULL)


def registry_register(where, subject, text, schema_type="AVRO"):
    sys.path.insert(0, HERE)
    import fake_registry
    return fake_registry.register(where, subject, text, schema_type)


def cmd_kafka_avro(args):
    import avro.schema
    parse = getattr(avro.schema, "parse", None) or avro.schema.Parse
    if args.registry and not args.subject:
        sys.exit("produce.py: --registry wants --subject")
    schemas, ids = [], []
    for path in [args.schema_file] + args.also:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        schemas.append(parse(text))
        ids.append(registry_register(args.registry, args.subject, text) if args.registry else None)
    key_schema = key_id = None
    if args.key_schema:
        with open(args.key_schema, encoding="utf-8") as f:
            key_text = f.read()
        key_schema = parse(key_text)
        key_id = registry_register(args.registry, args.key_subject, key_text)
    messages = []
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line:
            continue
        key = None
        if line.startswith("KEY:"):
            key, line = line[4:].split("|", 1)
            key = (frame(key_id, avro_body(key_schema, json.loads(key))) if key_schema
                   else key.encode())
        which = 0
        if line.startswith("@"):
            n_text, line = line[1:].split(":", 1)
            which = int(n_text) - 1
        if line.startswith("RAW:"):
            data = bytes.fromhex(line[4:])
        else:
            data = avro_body(schemas[which], json.loads(line))
            if ids[which] is not None:
                data = frame(ids[which], data)
        messages.append((key, data))
    kcat_put(args.brokers, args.topic, args.partition, messages)


def cmd_kafka_protobuf(args):
    from google.protobuf import json_format
    if args.registry and not args.subject:
        sys.exit("produce.py: --registry wants --subject")
    cls = message_class(descriptor_set(args.proto_file), args.message)
    framed = None
    if args.registry:
        with open(args.proto_file, encoding="utf-8") as f:
            sid = registry_register(args.registry, args.subject, f.read(), "PROTOBUF")
        forms = [b"\x00", zigzag_varint(1) + zigzag_varint(0)]  # indexes [0]: short, long
        framed = lambda n, body: frame(sid, body, forms[n % 2])
    messages = []
    for line in sys.stdin:
        if not line.strip():
            continue
        d = json.loads(line)
        if "hex" in d:
            body = bytes.fromhex(d["hex"])
        else:
            deep = d.pop("deep", 0)
            m = json_format.ParseDict(d, cls())
            g = m.geo if deep else None
            for i in range(deep):
                g.country = "d%d" % i
                g = g.region
            body = m.SerializeToString()
            if framed:
                body = framed(len(messages), body)
        messages.append((None, body))
    kcat_put(args.brokers, args.topic, args.partition, messages)


# ---------------------------------------------------------------------------------------------
# CSV

def cmd_csv(args):
    columns = args.columns.split(",")
    out = csv.writer(sys.stdout, lineterminator="\n")
    for event in events(args.events):
        out.writerow(["" if event.get(c) is None else event[c] for c in columns])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("avro")
    a.add_argument("--schema", action="append", required=True)
    a.add_argument("--pick", default="rr")
    a.add_argument("--plain", action="store_true")
    a.add_argument("events", nargs="+")
    p = sub.add_parser("protobuf")
    p.add_argument("--message", required=True)
    p.add_argument("--id", type=int, default=0)
    p.add_argument("--index-form", choices=["short", "long", "mixed"], default="short")
    p.add_argument("--plain", action="store_true")
    p.add_argument("events", nargs="+")
    s = sub.add_parser("proto-schema")
    s.add_argument("spec")
    g = s.add_mutually_exclusive_group(required=True)
    g.add_argument("--proto", action="store_true")
    g.add_argument("--descriptor", action="store_true")
    c = sub.add_parser("csv")
    c.add_argument("--columns", required=True)
    c.add_argument("events", nargs="+")
    sub.add_parser("delimiter")
    d = sub.add_parser("descriptor")
    d.add_argument("proto_file")
    ka = sub.add_parser("kafka-avro")
    for name in ("brokers", "topic", "partition", "schema_file"):
        ka.add_argument(name)
    ka.add_argument("--also", action="append", default=[])
    ka.add_argument("--registry")
    ka.add_argument("--subject")
    ka.add_argument("--key-schema")
    ka.add_argument("--key-subject")
    kp = sub.add_parser("kafka-protobuf")
    for name in ("brokers", "topic", "partition", "proto_file", "message"):
        kp.add_argument(name)
    kp.add_argument("--registry")
    kp.add_argument("--subject")
    args = ap.parse_args()
    if args.cmd == "avro":
        if args.pick != "rr" and not (args.pick.startswith("seed:") and args.pick[5:].isdigit()):
            sys.exit("produce.py: --pick rr or seed:N")
        cmd_avro(args)
    elif args.cmd == "protobuf":
        if not args.plain and args.id <= 0:
            sys.exit("produce.py: --id (the registry's schema id) or --plain")
        cmd_protobuf(args)
    elif args.cmd == "proto-schema":
        cmd_proto_schema(args)
    elif args.cmd == "csv":
        cmd_csv(args)
    elif args.cmd == "descriptor":
        print(base64.b64encode(descriptor_set(args.proto_file)).decode())
    elif args.cmd == "kafka-avro":
        cmd_kafka_avro(args)
    elif args.cmd == "kafka-protobuf":
        cmd_kafka_protobuf(args)
    else:
        print(DELIMITER_KCAT)


if __name__ == "__main__":
    main()
