"""A vendor for the kill test: answers {"score": 0.2}, or 503 to a fifth of the requests (so
steps retry), and counts the requests per idempotency-key header. GET /stats answers the counts.

usage: python3 flaky_vendor.py PORT
"""
import json
import random
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

counts = {}
lock = threading.Lock()


class Vendor(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        key = self.headers.get("idempotency-key", "")
        with lock:
            counts[key] = counts.get(key, 0) + 1
        if random.random() < 0.2:
            self.answer(503, b'{"error": "busy"}')
        else:
            self.answer(200, b'{"score": 0.2}')

    def do_GET(self):
        with lock:
            body = json.dumps(counts).encode()
        self.answer(200, body)

    def answer(self, status, body):
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Vendor).serve_forever()
