#!/usr/bin/env python3
"""The test suite's own Confluent-compatible schema registry (README "Formats"), for the fault
and end-to-end tests: python3 standard library only, 127.0.0.1 only.

  fake_registry.py serve [--port N] [--control-port M] [--user U --password P]
                         [--log FILE] [--ready-file FILE] [--first-id N] [--slow-seconds S]
      Serves the registry API on --port (0 or omitted: a free port) and the same API plus the
      switches on --control-port. Prints one line "port=N control=M" when both listen (and
      writes it to --ready-file). Runs until SIGTERM/SIGINT.

      --dir DIR (the pg_regress tests and README "Getting started with Avro"): also writes
      DIR/url (the API door's URL, written last: wait for it), DIR/control (the control door's)
      and DIR/pid, and exits by itself once DIR is removed (or after an hour), so a test that
      stops early leaves no registry behind.

  fake_registry.py control URL MODE      # MODE: normal | down | 500 | slow | slow:SECONDS
  fake_registry.py register URL SUBJECT FILE [--type AVRO|PROTOBUF]   # prints the id
  fake_registry.py log URL               # the request log so far (JSON lines)
      URL is the control door (http://127.0.0.1:M), or a --dir DIR (its DIR/control).

The API (both doors):
  POST /subjects/{subject}/versions   {"schema": TEXT[, "schemaType": T][, "references": [...]]}
      -> {"id": N}; the same schema (type and text; Avro compared as parsed JSON) gets the same id
      under every subject, registered again it adds no version.
  GET  /schemas/ids/{id}              -> {"schema": TEXT[, "schemaType": "PROTOBUF"]...}; 404
                                         {"error_code": 40403} for an id nobody registered
  GET  /subjects/{subject}/versions/latest -> {"subject", "version", "id", "schema"[, "schemaType"]}
  GET  /subjects, GET /subjects/{subject}/versions
Basic auth (--user/--password) guards the API door only; a missing or wrong Authorization
header is a 401. The control door has no auth: it is for the test.

Switches (POST /control/MODE on the control door), applied to the API door only:
  normal   answers
  down     the API door stops listening (connections refused) and open connections are closed
  500      every request is answered HTTP 500
  slow     every request waits --slow-seconds (default 15, beyond the client's timeout) first,
           then answers; a switch while it waits ends the wait (closed unless the new mode is
           normal)
Every request at the API door is logged (JSON line: time, method, path, status or what
happened, mode, whether it carried auth) to --log and kept for GET /control/log.
"""
import argparse
import base64
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

HOST = "127.0.0.1"
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class Store:
    """Schemas by id and subjects' versions; one lock for everything."""

    def __init__(self, first_id):
        self.lock = threading.Lock()
        self.next_id = first_id
        self.by_id = {}      # id -> {"schema", "schemaType", "references"}
        self.by_key = {}     # (type, canonical text) -> id
        self.subjects = {}   # subject -> [id, ...] (version v is index v-1)

    @staticmethod
    def canonical(schema_type, text):
        if schema_type == "AVRO":
            try:
                return json.dumps(json.loads(text), separators=(",", ":"), sort_keys=True)
            except RecursionError:  # nested deeper than Python parses: the text as it is
                return text
            except ValueError:
                return None
        return text

    def register(self, subject, body):
        text = body.get("schema")
        schema_type = body.get("schemaType", "AVRO")
        if not isinstance(text, str) or schema_type not in ("AVRO", "PROTOBUF", "JSON"):
            return 422, {"error_code": 42201, "message": "Invalid schema"}
        key = self.canonical(schema_type, text)
        if key is None:
            return 422, {"error_code": 42201, "message": "Invalid schema: not JSON"}
        with self.lock:
            sid = self.by_key.get((schema_type, key))
            if sid is None:
                sid = self.next_id
                self.next_id += 1
                self.by_key[(schema_type, key)] = sid
                self.by_id[sid] = {"schema": text, "schemaType": schema_type,
                                   "references": body.get("references") or []}
            versions = self.subjects.setdefault(subject, [])
            if sid not in versions:
                versions.append(sid)
        return 200, {"id": sid}

    def schema(self, sid):
        with self.lock:
            s = self.by_id.get(sid)
        if s is None:
            return 404, {"error_code": 40403, "message": "Schema %d not found" % sid}
        out = {"schema": s["schema"]}
        if s["schemaType"] != "AVRO":  # as Confluent: no schemaType for Avro
            out["schemaType"] = s["schemaType"]
        if s["references"]:
            out["references"] = s["references"]
        return 200, out

    def latest(self, subject):
        with self.lock:
            versions = list(self.subjects.get(subject, []))
        if not versions:
            return 404, {"error_code": 40401, "message": "Subject '%s' not found." % subject}
        code, out = self.schema(versions[-1])
        out.update({"subject": subject, "version": len(versions), "id": versions[-1]})
        return code, out


class Registry:
    def __init__(self, args):
        self.args = args
        self.store = Store(args.first_id)
        self.mode = "normal"
        self.slow_seconds = args.slow_seconds
        self.mode_changed = threading.Condition()
        self.log_lock = threading.Lock()
        self.log_lines = []
        self.log_file = open(args.log, "a", encoding="utf-8") if args.log else None
        self.api = None
        self.api_thread = None
        self.api_port = args.port
        self.api_lock = threading.Lock()
        self.conns = set()   # open sockets at the API door
        self.auth = None
        if args.user is not None:
            token = base64.b64encode(("%s:%s" % (args.user, args.password or "")).encode()).decode()
            self.auth = "Basic " + token

    def log(self, entry):
        line = json.dumps(entry, separators=(",", ":"))
        with self.log_lock:
            self.log_lines.append(line)
            if self.log_file:
                self.log_file.write(line + "\n")
                self.log_file.flush()

    # --- the API door: listening, closing
    def open_api(self):
        with self.api_lock:
            if self.api is not None:
                return
            server = ThreadingHTTPServer((HOST, self.api_port), make_handler(self, api=True))
            server.daemon_threads = True
            self.api_port = server.server_address[1]
            self.api = server
            self.api_thread = threading.Thread(target=server.serve_forever, daemon=True)
            self.api_thread.start()

    def close_api(self):
        with self.api_lock:
            server, self.api = self.api, None
            if server is None:
                return
            server.shutdown()
            server.server_close()
            for conn in list(self.conns):
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def set_mode(self, mode):
        if mode.startswith("slow:"):
            self.slow_seconds = float(mode[5:])
            mode = "slow"
        if mode not in ("normal", "down", "500", "slow"):
            raise ValueError(mode)
        with self.mode_changed:
            self.mode = mode
            self.mode_changed.notify_all()
        if mode == "down":
            self.close_api()
        else:
            self.open_api()
        self.log({"t": round(time.time(), 3), "control": mode})


def make_handler(reg, api):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real registry
        server_version = "stoatflow-fake-registry"

        def log_message(self, *a):  # quiet
            pass

        def setup(self):
            super().setup()
            if api:
                reg.conns.add(self.connection)

        def finish(self):
            try:
                super().finish()
            finally:
                reg.conns.discard(self.connection)

        def send_json(self, code, obj):
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return code

        def read_body(self):
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n > 0 else b""

        def handle_api(self, method):
            parts = [unquote(p) for p in self.path.split("?")[0].split("/") if p]
            if method == "POST" and len(parts) == 3 and parts[0] == "subjects" and parts[2] == "versions":
                try:
                    body = json.loads(self.read_body() or b"{}")
                except ValueError:
                    return self.send_json(400, {"error_code": 400, "message": "not JSON"})
                return self.send_json(*reg.store.register(parts[1], body))
            if method != "GET":
                return self.send_json(405, {"error_code": 405, "message": "method not allowed"})
            if len(parts) == 3 and parts[:2] == ["schemas", "ids"] and parts[2].isdigit():
                return self.send_json(*reg.store.schema(int(parts[2])))
            if len(parts) == 4 and parts[0] == "subjects" and parts[2] == "versions" and parts[3] == "latest":
                return self.send_json(*reg.store.latest(parts[1]))
            if parts == ["subjects"]:
                with reg.store.lock:
                    return self.send_json(200, sorted(reg.store.subjects))
            if len(parts) == 3 and parts[0] == "subjects" and parts[2] == "versions":
                with reg.store.lock:
                    versions = reg.store.subjects.get(parts[1])
                if not versions:
                    return self.send_json(404, {"error_code": 40401, "message": "Subject not found."})
                return self.send_json(200, list(range(1, len(versions) + 1)))
            return self.send_json(404, {"error_code": 404, "message": "HTTP 404 Not Found"})

        def handle_control(self, method):
            parts = [p for p in self.path.split("?")[0].split("/") if p]
            if len(parts) == 2 and parts[0] == "control" and method == "POST":
                try:
                    reg.set_mode(parts[1])
                except ValueError:
                    return self.send_json(400, {"error": "unknown mode " + parts[1]})
                return self.send_json(200, {"mode": reg.mode, "slow_seconds": reg.slow_seconds})
            if parts == ["control", "log"] and method == "GET":
                with reg.log_lock:
                    body = ("\n".join(reg.log_lines) + ("\n" if reg.log_lines else "")).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return 200
            if parts == ["control"] and method == "GET":
                return self.send_json(200, {"mode": reg.mode, "port": reg.api_port})
            return None

        def dispatch(self, method):
            if not api:
                if self.handle_control(method) is None:
                    self.handle_api(method)
                return
            entry = {"t": round(time.time(), 3), "method": method, "path": self.path,
                     "auth": "Authorization" in self.headers, "mode": reg.mode}
            mode = reg.mode
            if mode == "slow":
                reg.log(dict(entry, status="waiting (slow)"))
                deadline = time.time() + reg.slow_seconds
                with reg.mode_changed:
                    while reg.mode == "slow" and time.time() < deadline:
                        reg.mode_changed.wait(deadline - time.time())
                    mode = reg.mode
                if mode not in ("normal", "slow"):
                    entry["status"] = "closed (slow, then %s)" % mode
                    reg.log(entry)
                    self.close_connection = True
                    return
            if mode == "down":
                entry["status"] = "closed (down)"
                reg.log(entry)
                self.close_connection = True
                return
            if mode == "500":
                self.read_body()
                entry["status"] = self.send_json(500, {"error_code": 50001,
                                                       "message": "fake registry switched to 500"})
                reg.log(entry)
                return
            if reg.auth is not None and self.headers.get("Authorization") != reg.auth:
                self.read_body()
                entry["status"] = self.send_json(401, {"error_code": 401, "message": "Unauthorized"})
                reg.log(entry)
                return
            entry["status"] = self.handle_api(method)
            reg.log(entry)

        def guarded(self, method):
            try:
                self.dispatch(method)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
                reg.log({"t": round(time.time(), 3), "method": method, "path": self.path,
                         "mode": reg.mode, "status": "client went away"})
                self.close_connection = True

        def do_GET(self):
            self.guarded("GET")

        def do_POST(self):
            self.guarded("POST")

    return Handler


def serve(args):
    reg = Registry(args)
    reg.open_api()
    control = ThreadingHTTPServer((HOST, args.control_port), make_handler(reg, api=False))
    control.daemon_threads = True
    line = "port=%d control=%d" % (reg.api_port, control.server_address[1])
    if args.ready_file:
        tmp = args.ready_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(line + "\n")
        os.replace(tmp, args.ready_file)
    print(line, flush=True)
    if args.dir:
        write_dir(args.dir, reg.api_port, control.server_address[1])

    def stop(*_):
        threading.Thread(target=control.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    control.serve_forever()
    reg.close_api()


def write_dir(directory, api_port, control_port):
    """--dir: the doors' URLs and the pid as files; the watch that ends the process with DIR."""
    os.makedirs(directory, exist_ok=True)
    for name, text in (("pid", str(os.getpid())),
                       ("control", "http://%s:%d" % (HOST, control_port)),
                       ("url", "http://%s:%d" % (HOST, api_port))):  # url last: the ready mark
        tmp = os.path.join(directory, name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, os.path.join(directory, name))

    def watch():
        started = time.time()
        while os.path.isdir(directory) and time.time() - started < 3600:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def control_url(where):
    """A control door's URL, or a --dir directory's (its control file)."""
    if os.path.isdir(where):
        with open(os.path.join(where, "control"), encoding="utf-8") as f:
            return f.read().strip()
    return where.rstrip("/")


def register(where, subject, text, schema_type="AVRO"):
    """Registers schema text under subject through the control door (URL or --dir directory);
    returns the id. For the producers (produce.py --registry)."""
    body = {"schema": text}
    if schema_type != "AVRO":
        body["schemaType"] = schema_type
    code, out = request(control_url(where) + "/subjects/%s/versions"
                        % urllib.request.quote(subject, safe=""), "POST", body)
    if code != 200:
        sys.exit("fake_registry: register %s: HTTP %d %s" % (subject, code, out))
    return json.loads(out)["id"]


def request(url, method="GET", body=None, timeout=10):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": CONTENT_TYPE})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--control-port", type=int, default=0)
    s.add_argument("--user")
    s.add_argument("--password")
    s.add_argument("--log")
    s.add_argument("--ready-file")
    s.add_argument("--first-id", type=int, default=1)
    s.add_argument("--slow-seconds", type=float, default=15.0)
    s.add_argument("--dir")
    c = sub.add_parser("control")
    c.add_argument("url")
    c.add_argument("mode")
    r = sub.add_parser("register")
    r.add_argument("url")
    r.add_argument("subject")
    r.add_argument("file")
    r.add_argument("--type", default="AVRO", choices=["AVRO", "PROTOBUF", "JSON"])
    g = sub.add_parser("log")
    g.add_argument("url")
    args = ap.parse_args()
    if args.cmd == "serve":
        serve(args)
        return
    base = control_url(args.url)
    if args.cmd == "control":
        code, text = request(base + "/control/" + args.mode, "POST", {})
        if code != 200:
            sys.exit("fake_registry: control %s: HTTP %d %s" % (args.mode, code, text))
    elif args.cmd == "register":
        with open(args.file, encoding="utf-8") as f:
            text = f.read().strip()
        print(register(base, args.subject, text, args.type))
    elif args.cmd == "log":
        code, text = request(base + "/control/log")
        if code != 200:
            sys.exit("fake_registry: log: HTTP %d" % code)
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
