#!/usr/bin/python3
"""Protobuf records for the pg_regress test protobuf_e2e, encoded by Google's protobuf library
(Debian python3-protobuf; protoc from protobuf-compiler), so stoatflow's reader meets an encoder
that is not its own.

    protobuf_produce.py descriptor             the base64 FileDescriptorSet of PROTO below
                                               (protoc --include_imports), for format_options
    protobuf_produce.py descriptor legacy      the same of LEGACY (a proto2 group)
    protobuf_produce.py produce TOPIC PART     JSON lines on stdin, one message each, put on
                                               TOPIC's partition PART with kcat ($KAFKA_BROKERS)
        [--registry DIR --subject S]           PROTO registered (PROTOBUF, .proto text) in the
                                               test registry's DIR (test/registry/
                                               mini_registry.py) and each message framed:
                                               magic byte, its id, message indexes (PageView:
                                               the short form 0 and the long form 1, 0 in turn)

A line is an e2e.PageView in proto3's JSON mapping (json_format.ParseDict: a Timestamp as RFC
3339 text, an enum by name, absent members absent), with "deep": N for geo.region nested N
levels, or {"hex": "..."}: those bytes as they are (the hostile records).
"""
import base64, json, os, subprocess, sys, tempfile
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

PROTO = """
syntax = "proto3";
package e2e;
import "google/protobuf/timestamp.proto";

enum Kind {
  KIND_UNKNOWN = 0;
  VIEW = 1;
  CLICK = 2;
  BUY = 3;
}

message PageView {
  message City {
    string name = 1;
  }
  message Geo {
    string country = 1;
    City city = 2;
    Geo region = 3;
  }
  string page = 1;
  google.protobuf.Timestamp ts = 2;
  int64 amount_cents = 3;
  Kind kind = 4;
  Geo geo = 5;
  repeated string tags = 6;
  map<string, int32> counts = 7;
  double score = 8;
  optional int32 qty = 9;
  bytes blob = 10;
  uint64 big = 11;
  bool flag = 12;
}
"""

LEGACY = """
syntax = "proto2";
package legacy;
message Old {
  optional string id = 1;
  optional group Extra = 2 {
    optional int32 n = 3;
  }
}
"""


def descriptor_set(proto=PROTO):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "e2e.proto")
        out = os.path.join(tmp, "e2e.desc")
        with open(src, "w") as f:
            f.write(proto)
        subprocess.check_call(["protoc", "--include_imports", "--descriptor_set_out=" + out,
                               "-I", tmp, "-I", "/usr/include", src])
        with open(out, "rb") as f:
            return f.read()


def page_view_class(desc):
    pool = descriptor_pool.DescriptorPool()
    for f in descriptor_pb2.FileDescriptorSet.FromString(desc).file:
        pool.Add(f)
    return message_factory.MessageFactory(pool).GetPrototype(
        pool.FindMessageTypeByName("e2e.PageView"))


def main():
    if sys.argv[1:2] == ["descriptor"]:
        legacy = sys.argv[2:] == ["legacy"]
        print(base64.b64encode(descriptor_set(LEGACY if legacy else PROTO)).decode())
        return
    desc = descriptor_set()
    args = sys.argv[1:]
    registry = subject = None
    if len(args) == 7 and args[3] == "--registry" and args[5] == "--subject":
        registry, subject = args[4], args[6]
        args = args[:3]
    if len(args) != 3 or args[0] != "produce":
        sys.exit(__doc__)
    topic, part = args[1], args[2]
    PageView = page_view_class(desc)
    frame = None
    if registry:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "registry"))
        import mini_registry
        schema_id = mini_registry.register(registry, subject, PROTO, "PROTOBUF")
        forms = [b"\x00", b"\x02\x00"]  # indexes [0]: one 0 byte, or count 1 and index 0
        frame = lambda n, body: b"\x00" + schema_id.to_bytes(4, "big") + forms[n % 2] + body
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for line in sys.stdin:
            if not line.strip():
                continue
            d = json.loads(line)
            if "hex" in d:
                body = bytes.fromhex(d["hex"])
            else:
                deep = d.pop("deep", 0)
                m = json_format.ParseDict(d, PageView())
                g = m.geo
                for i in range(deep):
                    g.country = "d%d" % i
                    g = g.region
                body = m.SerializeToString()
                if frame:
                    body = frame(len(files), body)
            files.append(os.path.join(tmp, "%06d" % len(files)))
            with open(files[-1], "wb") as f:
                f.write(body)
        # kcat: one message per file, in order.
        subprocess.check_call(["kcat", "-P", "-q", "-b", os.environ["KAFKA_BROKERS"], "-t", topic,
                               "-p", part] + files, stdout=subprocess.DEVNULL)


main()
