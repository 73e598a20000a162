"""A vendor that is slow now and then: every SLOW_EVERY-th request is answered only after
SLOW_SECONDS (6: past vendor-app's 5 s timeout for check), the others at once with a score. The
failpoint run (loadtests/faults/failpoints) points its runs' install here, so calls time out
and succeed in turn. A timeout counts against the app's circuit, and a success after one resets
it (SPEC §3.7; a vendor's error answer would not count): the runs stage writes those outcomes to
the outbox, so the relay has work under every fault.

    python3 flaky_vendor.py PORT [SLOW_EVERY] [SLOW_SECONDS]
"""

import itertools
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
SLOW_EVERY = int(sys.argv[2]) if len(sys.argv) > 2 else 4
SLOW_SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 6
COUNT = itertools.count(1)
LOCK = threading.Lock()
OK = b'{"score": 0.2}'


class Vendor(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self):
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        with LOCK:
            n = next(COUNT)
        if n % SLOW_EVERY == 0:
            time.sleep(SLOW_SECONDS)
        try:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(OK)))
            self.end_headers()
            self.wfile.write(OK)
        except OSError:
            pass  # the caller gave up waiting

    do_GET = do_POST = do_PUT = answer

    def log_message(self, *args):
        pass


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", PORT), Vendor).serve_forever()
