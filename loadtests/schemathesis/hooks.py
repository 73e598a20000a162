"""Schemathesis hooks of loadtests/schemathesis/run (SCHEMATHESIS_HOOKS names this module).

`POST /apps/uploads` takes a module as `application/wasm`: its generated bodies go as the
bytes they are, as schemathesis sends `application/octet-stream`.
"""

import schemathesis
from schemathesis.transport.requests import serialize_binary


@schemathesis.serializer("application/wasm")
def wasm(ctx, value):
    return {"data": serialize_binary(value)}
