#!/usr/bin/env python3
"""Self-test of the registry rig (test/registry/README.md), no PostgreSQL, no broker: the fake
registry's API, auth and switches as a client sees them, and produce.py's records read back by
the reference libraries. Run with a python3 that has python3-avro and python3-protobuf
(registry.sh's registry_python). Prints "registry selftest: N passed, M failed"."""
import base64
import http.client
import io
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "fake_registry.py")
PRODUCE = os.path.join(HERE, "produce.py")
passed = failed = 0


def check(what, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL: %s %s" % (what, detail))


def get(port, path, auth=None, timeout=5.0):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {}
    if auth:
        headers["Authorization"] = "Basic " + base64.b64encode(auth.encode()).decode()
    c.request("GET", path, headers=headers)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


def post(port, path, obj):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("POST", path, body=json.dumps(obj), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, json.loads(body)


def main():
    tmp = tempfile.mkdtemp(prefix="stoatflow-registry-selftest.")
    ready = os.path.join(tmp, "ready")
    log = os.path.join(tmp, "log")
    proc = subprocess.Popen([sys.executable, FAKE, "serve", "--ready-file", ready, "--log", log,
                             "--user", "u", "--password", "p", "--slow-seconds", "3"],
                            stdout=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while not os.path.exists(ready) and time.time() < deadline:
            time.sleep(0.05)
        line = open(ready).read().split()
        port, ctl = int(line[0][5:]), int(line[1][8:])
        v1 = {"type": "record", "name": "E", "fields": [{"name": "a", "type": "int"}]}
        code, out = post(ctl, "/subjects/t-value/versions", {"schema": json.dumps(v1)})
        check("register", code == 200 and out == {"id": 1}, out)
        code, out = post(ctl, "/subjects/other-value/versions", {"schema": json.dumps(v1, indent=2)})
        check("same schema, same id", code == 200 and out == {"id": 1}, out)
        code, out = post(ctl, "/subjects/t-value/versions",
                         {"schema": 'syntax = "proto3"; message M { int64 a = 1; }', "schemaType": "PROTOBUF"})
        check("register protobuf", code == 200 and out == {"id": 2}, out)
        code, body = get(port, "/schemas/ids/1", "u:p")
        check("by id", code == 200 and json.loads(json.loads(body)["schema"]) == v1 and
              "schemaType" not in json.loads(body), body)
        code, body = get(port, "/schemas/ids/2", "u:p")
        check("by id, protobuf", code == 200 and json.loads(body).get("schemaType") == "PROTOBUF", body)
        code, body = get(port, "/subjects/t-value/versions/latest", "u:p")
        doc = json.loads(body)
        check("latest", code == 200 and doc["id"] == 2 and doc["version"] == 2, body)
        code, body = get(port, "/schemas/ids/99", "u:p")
        check("404 by id", code == 404 and json.loads(body)["error_code"] == 40403, body)
        code, body = get(port, "/subjects/nope/versions/latest", "u:p")
        check("404 subject", code == 404 and json.loads(body)["error_code"] == 40401, body)
        check("401 without auth", get(port, "/schemas/ids/1")[0] == 401)
        check("401 wrong password", get(port, "/schemas/ids/1", "u:x")[0] == 401)

        subprocess.run([sys.executable, FAKE, "control", "http://127.0.0.1:%d" % ctl, "500"], check=True)
        check("500", get(port, "/schemas/ids/1", "u:p")[0] == 500)
        subprocess.run([sys.executable, FAKE, "control", "http://127.0.0.1:%d" % ctl, "down"], check=True)
        try:
            get(port, "/schemas/ids/1", "u:p")
            check("down refuses", False)
        except ConnectionRefusedError:
            check("down refuses", True)
        code, out = post(ctl, "/subjects/t-value/versions", {"schema": json.dumps(dict(v1, name="F"))})
        check("register while down", code == 200 and out == {"id": 3}, out)
        subprocess.run([sys.executable, FAKE, "control", "http://127.0.0.1:%d" % ctl, "slow"], check=True)
        t = time.time()
        try:
            get(port, "/schemas/ids/3", "u:p", timeout=1.0)
            check("slow: past a 1 s timeout", False)
        except socket.timeout:
            check("slow: past a 1 s timeout", time.time() - t < 2)
        t = time.time()
        code, _ = get(port, "/schemas/ids/3", "u:p", timeout=10)
        check("slow: answers after 3 s", code == 200 and 2.5 < time.time() - t < 5, time.time() - t)
        subprocess.run([sys.executable, FAKE, "control", "http://127.0.0.1:%d" % ctl, "normal"], check=True)
        check("normal again", get(port, "/schemas/ids/3", "u:p")[0] == 200)
        entries = [json.loads(x) for x in open(log)]
        modes = [e.get("mode") for e in entries if e.get("path") == "/schemas/ids/3"]
        check("the request log", "slow" in modes and modes[-1] == "normal", modes)
    finally:
        proc.terminate()
        proc.wait(10)

    # produce.py, read back by the reference libraries
    import avro.io
    import avro.schema
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    parse = getattr(avro.schema, "parse", None) or avro.schema.Parse
    ev = os.path.join(tmp, "ev.jsonl")
    with open(ev, "w") as f:
        for i in range(50):
            f.write(json.dumps({"user_id": "u%d" % i, "ts": 1000 * i, "amount": i * 7 - 100}) + "\n")
    s1 = {"type": "record", "name": "Ev", "fields": [{"name": "user_id", "type": "string"},
          {"name": "ts", "type": "long"}, {"name": "amount", "type": "int"},
          {"name": "note", "type": "string", "default": "d"}]}
    s2 = {"type": "record", "name": "Ev", "fields": [{"name": "amount", "type": "long"},
          {"name": "user_id", "type": "string"}, {"name": "ts", "type": "long"}]}
    for name, s in (("s1", s1), ("s2", s2)):
        with open(os.path.join(tmp, name + ".avsc"), "w") as f:
            json.dump(s, f)
    out = subprocess.run([sys.executable, PRODUCE, "avro", "--schema", "7=" + os.path.join(tmp, "s1.avsc"),
                          "--schema", "9=" + os.path.join(tmp, "s2.avsc"), ev], check=True,
                         stdout=subprocess.PIPE).stdout
    delim = subprocess.run([sys.executable, PRODUCE, "delimiter"], check=True, stdout=subprocess.PIPE,
                           text=True).stdout.strip().encode().decode("unicode_escape").encode("latin-1")
    records = out.split(delim)
    check("avro: 50 records", records[-1] == b"" and len(records) == 51, len(records))
    schemas = {7: parse(json.dumps(s1)), 9: parse(json.dumps(s2))}
    good = 0
    for i, r in enumerate(records[:-1]):
        sid = struct.unpack(">I", r[1:5])[0]
        datum = avro.io.DatumReader(schemas[sid]).read(avro.io.BinaryDecoder(io.BytesIO(r[5:])))
        good += (r[0] == 0 and sid == (7, 9)[i % 2] and datum["user_id"] == "u%d" % i and
                 datum["amount"] == i * 7 - 100 and datum.get("note", "d") == "d")
    check("avro: framed, round-robin, decodes", good == 50, good)
    spec = os.path.join(tmp, "spec.json")
    with open(spec, "w") as f:
        json.dump({"package": "p", "message": "Ev", "fields": [["user_id", "string", 1], ["ts", "int64", 2],
                                                                 ["amount", "int64", 3]]}, f)
    b64 = subprocess.run([sys.executable, PRODUCE, "proto-schema", spec, "--descriptor"], check=True,
                         stdout=subprocess.PIPE, text=True).stdout.strip()
    fds = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(b64))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fds.file[0])
    desc = pool.FindMessageTypeByName("p.Ev")
    cls = (message_factory.GetMessageClass(desc) if hasattr(message_factory, "GetMessageClass")
           else message_factory.MessageFactory(pool).GetPrototype(desc))
    out = subprocess.run([sys.executable, PRODUCE, "protobuf", "--message", spec, "--id", "5",
                          "--index-form", "mixed", ev], check=True, stdout=subprocess.PIPE).stdout
    good = 0
    for i, r in enumerate(out.split(delim)[:-1]):
        prefix = b"\x00\x00\x00\x00\x05" + (b"\x00" if i % 2 == 0 else b"\x02\x00")
        if r.startswith(prefix):
            m = cls.FromString(r[len(prefix):])
            good += m.user_id == "u%d" % i and m.ts == 1000 * i and m.amount == i * 7 - 100
    check("protobuf: framed with message indexes, decodes", good == 50, good)
    out = subprocess.run([sys.executable, PRODUCE, "csv", "--columns", "user_id,ts,amount", ev], check=True,
                         stdout=subprocess.PIPE, text=True).stdout.splitlines()
    check("csv", len(out) == 50 and out[3] == "u3,3000,-79", out[:4])
    shutil.rmtree(tmp, ignore_errors=True)
    print("registry selftest: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
