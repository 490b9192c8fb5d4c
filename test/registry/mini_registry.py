#!/usr/bin/python3
"""A minimal Confluent-compatible schema registry for the pg_regress tests (the endpoints a
source uses: GET /schemas/ids/{id}, GET /subjects/{subject}/versions/latest), serving what
register() wrote into a directory. Switches, as files in that directory: `mode` holding "ok",
"500" (every request answers 500) or "slow" (answers after 15 s, beyond the client's timeout);
with basic auth when `auth` holds "user:password".

  mini_registry.py serve DIR      binds 127.0.0.1 on a free port, writes DIR/url, serves
  mini_registry.py mode DIR MODE  sets the mode
"""
import base64
import http.server
import json
import os
import sys
import threading
import time
import urllib.parse


def register(directory, subject, text, schema_type="AVRO"):
    """Registers schema text under subject (the same text again: the same id); returns its id.
    schema_type: AVRO (JSON text, compared as JSON) or PROTOBUF (.proto text, compared as is)."""
    ids = os.path.join(directory, "ids")
    subjects = os.path.join(directory, "subjects")
    os.makedirs(ids, exist_ok=True)
    os.makedirs(subjects, exist_ok=True)
    def canon(t):
        return json.dumps(json.loads(t), sort_keys=True) if schema_type == "AVRO" else t
    canonical = canon(text)
    existing = sorted(int(n[:-5]) for n in os.listdir(ids) if n.endswith(".json"))
    found = None
    for i in existing:
        with open(os.path.join(ids, "%d.json" % i)) as f:
            stored = json.load(f)
            if (stored.get("schemaType", "AVRO") == schema_type and
                    canon(stored["schema"]) == canonical):
                found = i
    schema_id = found or (existing[-1] + 1 if existing else 1)
    answer = {"schema": text}
    if schema_type != "AVRO":
        answer["schemaType"] = schema_type
    with open(os.path.join(ids, "%d.json" % schema_id), "w") as f:
        json.dump(answer, f)
    versions_file = os.path.join(subjects, urllib.parse.quote(subject, safe="") + ".json")
    versions = []
    if os.path.exists(versions_file):
        with open(versions_file) as f:
            versions = json.load(f)
    if schema_id not in versions:
        versions.append(schema_id)
    with open(versions_file, "w") as f:
        json.dump(versions, f)
    return schema_id


def serve(directory):
    def read(name, default=""):
        try:
            with open(os.path.join(directory, name)) as f:
                return f.read().strip()
        except OSError:
            return default

    class Handler(http.server.BaseHTTPRequestHandler):
        def answer(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            mode = read("mode", "ok")
            if mode == "slow":
                time.sleep(15)
            if mode == "500":
                return self.answer(500, {"error_code": 50001, "message": "switched to 500"})
            auth = read("auth")
            if auth:
                want = "Basic " + base64.b64encode(auth.encode()).decode()
                if self.headers.get("Authorization") != want:
                    return self.answer(401, {"error_code": 40101, "message": "Unauthorized"})
            parts = self.path.split("/")
            if len(parts) == 4 and parts[1] == "schemas" and parts[2] == "ids":
                try:
                    with open(os.path.join(directory, "ids", "%d.json" % int(parts[3]))) as f:
                        return self.answer(200, json.load(f))
                except (OSError, ValueError):
                    return self.answer(404, {"error_code": 40403, "message": "Schema not found"})
            if len(parts) == 5 and parts[1] == "subjects" and parts[3] == "versions":
                subject = urllib.parse.unquote(parts[2])
                try:
                    with open(os.path.join(directory, "subjects",
                                           urllib.parse.quote(subject, safe="") + ".json")) as f:
                        versions = json.load(f)
                    schema_id = versions[-1]
                    with open(os.path.join(directory, "ids", "%d.json" % schema_id)) as f:
                        stored = json.load(f)
                except OSError:
                    return self.answer(404, {"error_code": 40401, "message": "Subject not found"})
                return self.answer(200, dict(stored, subject=subject, version=len(versions),
                                             id=schema_id))
            return self.answer(404, {"error_code": 404, "message": "not found"})

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "url.tmp"), "w") as f:
        f.write("http://127.0.0.1:%d" % server.server_address[1])
    os.rename(os.path.join(directory, "url.tmp"), os.path.join(directory, "url"))
    with open(os.path.join(directory, "pid"), "w") as f:
        f.write(str(os.getpid()))
    # A test that stops early leaves no registry behind: it exits once its directory is gone
    # (pg_regress.sh removes the scratch tree) or after an hour.
    def watch():
        started = time.time()
        while os.path.isdir(directory) and time.time() - started < 3600:
            time.sleep(1)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    elif sys.argv[1] == "mode":
        with open(os.path.join(sys.argv[2], "mode"), "w") as f:
            f.write(sys.argv[3])
