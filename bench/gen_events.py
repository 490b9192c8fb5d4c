#!/usr/bin/env python3
"""Event generator for bench/e2e.sh: page-view JSON lines, one file per Kafka partition.

    gen_events.py OUTDIR --keys K --events-per-key C --partitions P [--minutes M] [--seed S]
                  [--format json|avro]
    gen_events.py --self-check      (the Avro encoding against python3-avro; needs its module)

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
"""
import argparse
import os
import random
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


def self_check():
    """The hand-written encoding equals python3-avro's, byte for byte, and decodes back."""
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
    print("gen_events.py self-check: %d records encode as python3-avro writes them" % len(cases))


def main():
    if sys.argv[1:] == ["--self-check"]:
        self_check()
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--keys", type=int, required=True)
    ap.add_argument("--events-per-key", type=int, required=True)
    ap.add_argument("--partitions", type=int, required=True)
    ap.add_argument("--minutes", type=int, default=60)
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--format", choices=("json", "avro"), default="json")
    a = ap.parse_args()
    if a.keys < 1 or a.keys > 1000000 or a.events_per_key < 1 or a.partitions < 1 or a.minutes < 1:
        sys.exit("gen_events.py: bad arguments")
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
                lines.append(avro_record("user%06d" % (x & 1048575), BASE_MS + (x >> 20), rnd.randint(1, 100),
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
