#!/usr/bin/env python3
"""Event generator for bench/e2e.sh: page-view JSON lines, one file per Kafka partition.

    gen_events.py OUTDIR --keys K --events-per-key C --partitions P [--minutes M] [--seed S]
                  [--format json|avro [--schema-id N]]
    gen_events.py --self-check [--schema-id N]
                    (the Avro encoding against python3-avro, needs its module; the framing too)

Keys user000000 .. user{K-1} (zero-padded to 6 digits) are hashed (CRC-32) to partitions.
Every key gets exactly C events, each at a uniformly random millisecond of the M minutes
starting 2026-11-30T10:00:00Z; within a partition the lines are sorted by event time, so
every partition is in order. One line:

    {"user_id": "user012345", "ts": 1796032812345, "amount": 57, "page": "/catalog/c07/item-04211"}

(about 97 bytes with the newline; amount 1..100, page one of 100,000 catalog paths). Writes OUTDIR/p<N>.jsonl for every partition N and
OUTDIR/manifest.txt: one "partition lines bytes" line per partition, then totals as
"# events=… bytes=… keys=… minutes=…". Deterministic for a given seed.

--format avro: the same events (the same draws) as bare Avro bodies of AVRO_SCHEMA, written
here by hand (zigzag varints, length-prefixed strings: python3-avro would take minutes for
millions of records; --self-check compares the two on a few thousand records), one message per
record in OUTDIR/p<N>.avro, each followed by the byte 0x1f, a byte no body of this record
contains (strings are ASCII text, lengths 20 and 46, amount's zigzag bytes are even or 0x01,
the last byte of ts's varint is 0x68): checked for every partition, so `kcat -P -D '\x1f'`
splits the file into exactly its records. About 43 bytes per record.

--schema-id N (with --format avro): every body Confluent-framed, as a registry's serializer
writes it: the byte 0, N as 4 bytes big-endian, then the body (5 bytes more per record), for a
source that reads through a schema registry where AVRO_SCHEMA has id N. An id with the byte 0x1f
in its 4 bytes is refused (the delimiter). --self-check checks the framing as well: byte 0, the
id read back big-endian, the body after it decoding by python3-avro, the frame equal to the one
test/registry/produce.py writes (the pg_regress tests' producer), for ids of every byte width
and the one given.
"""
import argparse
import os
import random
import struct
import sys
import zlib

BASE_MS = 1796032800000  # 2026-11-30T10:00:00Z
AVRO_DELIM = b"\x1f"
AVRO_SCHEMA = ('{"type": "record", "name": "PageView", "fields": ['
               '{"name": "user_id", "type": "string"}, '
               '{"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}, '
               '{"name": "amount", "type": "int"}, {"name": "page", "type": "string"}]}')


def avro_long(n):
    """Avro's int/long: zigzag, then a little-endian base-128 varint."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def avro_string(s):
    b = s.encode()
    return avro_long(len(b)) + b


def avro_record(user, ts, amount, page):
    return avro_string(user) + avro_long(ts) + avro_long(amount) + avro_string(page)


def confluent_frame(schema_id):
    """The 5 bytes before a registry-framed body: magic byte 0, the id as a big-endian uint32."""
    if not 0 <= schema_id <= 0x7FFFFFFF:
        sys.exit("gen_events.py: schema id %d out of range (0..2^31-1)" % schema_id)
    return b"\x00" + schema_id.to_bytes(4, "big")


def check_framing(schema_ids, bodies, schema):
    """confluent_frame: byte 0, the id back from struct's big-endian reading, the body intact
    and decoding by python3-avro, and the same bytes as test/registry/produce.py's frame()."""
    import io
    import avro.io
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "registry"))
    import produce
    for sid in schema_ids:
        for body in bodies:
            framed = confluent_frame(sid) + body
            if len(framed) != len(body) + 5 or framed[0] != 0 or struct.unpack(">I", framed[1:5])[0] != sid \
                    or framed[5:] != body:
                sys.exit("gen_events.py self-check: id %d frames %s as %s" % (sid, body.hex(), framed.hex()))
            if framed != produce.frame(sid, body):
                sys.exit("gen_events.py self-check: id %d: %s, test/registry/produce.py frames it as %s"
                         % (sid, framed.hex(), produce.frame(sid, body).hex()))
            avro.io.DatumReader(schema).read(avro.io.BinaryDecoder(io.BytesIO(framed[5:])))


def self_check(run_id=None):
    """The hand-written encoding equals python3-avro's, byte for byte, and decodes back; the
    registry framing (confluent_frame) is right for ids of every width and run_id."""
    import datetime
    import io
    import avro.io
    import avro.schema
    schema = avro.schema.parse(AVRO_SCHEMA)
    rnd = random.Random(7)
    cases = [(0, 0, 1, 0), (999999, 3600000 - 1, 100, 99999), (12345, 0, 64, 4211), (1, 1, 63, 50)]
    cases += [(rnd.randrange(1000000), rnd.randrange(3600000), rnd.randint(1, 100), rnd.randrange(100000))
              for _ in range(5000)]
    for k, off, amount, item in cases:
        user, page = "user%06d" % k, "/catalog/c%02d/item-%05d" % (item % 50, item)
        mine = avro_record(user, BASE_MS + off, amount, page)
        buf = io.BytesIO()
        # the writer takes the logical type's value: a datetime, exact to the millisecond
        when = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(milliseconds=BASE_MS + off)
        avro.io.DatumWriter(schema).write({"user_id": user, "ts": when, "amount": amount, "page": page},
                                          avro.io.BinaryEncoder(buf))
        if mine != buf.getvalue():
            sys.exit("gen_events.py self-check: %r encodes as %s, python3-avro as %s"
                     % ((user, off, amount, page), mine.hex(), buf.getvalue().hex()))
        back = avro.io.DatumReader(schema).read(avro.io.BinaryDecoder(io.BytesIO(mine)))
        if (back["user_id"], back["amount"], back["page"]) != (user, amount, page) or back["ts"] != when:
            sys.exit("gen_events.py self-check: %r decodes as %r" % ((user, off, amount, page), back))
        if AVRO_DELIM in mine:
            sys.exit("gen_events.py self-check: the delimiter occurs in %s" % mine.hex())
    ids = [0, 1, 0x1f, 0xff, 0x100, 0x1234, 0x10000, 0xabcdef, 0x1000000, 0x7fffffff]
    if run_id is not None:
        ids.append(run_id)
        if AVRO_DELIM in confluent_frame(run_id):
            sys.exit("gen_events.py self-check: the frame of schema id %d holds the delimiter 0x1f" % run_id)
    bodies = [avro_record("user%06d" % k, BASE_MS + off, amount, "/catalog/c%02d/item-%05d" % (item % 50, item))
              for k, off, amount, item in cases[:50]]
    check_framing(ids, bodies, schema)
    print("gen_events.py self-check: %d records encode as python3-avro writes them; framed with %d schema ids "
          "(%s) as test/registry/produce.py frames them"
          % (len(cases), len(ids), "the run's %d among them" % run_id if run_id is not None else "no run id"))


def main():
    if sys.argv[1:2] == ["--self-check"]:
        sc = argparse.ArgumentParser(prog="gen_events.py --self-check")
        sc.add_argument("--self-check", action="store_true")
        sc.add_argument("--schema-id", type=int)
        self_check(sc.parse_args().schema_id)
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--keys", type=int, required=True)
    ap.add_argument("--events-per-key", type=int, required=True)
    ap.add_argument("--partitions", type=int, required=True)
    ap.add_argument("--minutes", type=int, default=60)
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--format", choices=("json", "avro"), default="json")
    ap.add_argument("--schema-id", type=int, help="(avro) Confluent-frame every body with this schema id")
    a = ap.parse_args()
    if a.keys < 1 or a.keys > 1000000 or a.events_per_key < 1 or a.partitions < 1 or a.minutes < 1:
        sys.exit("gen_events.py: bad arguments")
    frame = b""
    if a.schema_id is not None:
        if a.format != "avro":
            sys.exit("gen_events.py: --schema-id frames Avro bodies: it needs --format avro")
        frame = confluent_frame(a.schema_id)
        if AVRO_DELIM in frame:
            sys.exit("gen_events.py: the frame of schema id %d holds the delimiter 0x1f" % a.schema_id)
    os.makedirs(a.outdir, exist_ok=True)
    span = a.minutes * 60000
    nkeys = a.keys
    by_part = [[] for _ in range(a.partitions)]
    for k in range(nkeys):
        by_part[zlib.crc32(b"user%06d" % k) % a.partitions].append(k)

    rnd = random.Random(a.seed)
    total_lines = total_bytes = 0
    manifest = []
    for p, keys in enumerate(by_part):
        # (time, key) packed in one int: sorting ints is much faster than sorting tuples.
        ev = []
        for k in keys:
            for _ in range(a.events_per_key):
                ev.append(int(rnd.random() * span) * 1048576 + k)
        ev.sort()
        lines = []
        if a.format == "json":
            for x in ev:
                item = rnd.randrange(100000)
                lines.append('{"user_id": "user%06d", "ts": %d, "amount": %d, "page": "/catalog/c%02d/item-%05d"}\n'
                             % (x & 1048575, BASE_MS + (x >> 20), rnd.randint(1, 100), item % 50, item))
            data = "".join(lines).encode()
            name = "p%d.jsonl" % p
        else:
            for x in ev:  # the same draws in the same order as the JSON lines
                item = rnd.randrange(100000)
                lines.append(frame + avro_record("user%06d" % (x & 1048575), BASE_MS + (x >> 20), rnd.randint(1, 100),
                                                 "/catalog/c%02d/item-%05d" % (item % 50, item)) + AVRO_DELIM)
            data = b"".join(lines)
            if data.count(AVRO_DELIM) != len(lines):
                sys.exit("gen_events.py: the delimiter 0x1f occurs inside a record of partition %d" % p)
            name = "p%d.avro" % p
        with open(os.path.join(a.outdir, name), "wb") as f:
            f.write(data)
        manifest.append("%d %d %d" % (p, len(lines), len(data)))
        total_lines += len(lines)
        total_bytes += len(data)
    with open(os.path.join(a.outdir, "manifest.txt"), "w") as f:
        f.write("\n".join(manifest) + "\n")
        f.write("# events=%d bytes=%d keys=%d minutes=%d\n" % (total_lines, total_bytes, nkeys, a.minutes))
    print("events=%d bytes=%d keys=%d partitions=%d minutes=%d"
          % (total_lines, total_bytes, nkeys, a.partitions, a.minutes))


if __name__ == "__main__":
    main()
