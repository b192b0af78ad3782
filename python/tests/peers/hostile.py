#!/usr/bin/env python3
"""A hostile peer: a valid hello, then as fast as it can: 1 MiB events that
nobody takes (HOSTILE_EVENTS_MIB of them), a flood of stderr, and finally a
line that never ends. The client's memory must stay within the protocol's
bounds."""

import json
import os
import signal

CAPS = [
    "create",
    "resume",
    "state",
    "submit",
    "enqueue",
    "interrupt",
    "interrupt_and_submit",
    "approve",
    "detach",
    "configure",
]
out = os.fdopen(1, "wb", buffering=0)
err = os.fdopen(2, "wb", buffering=0)
hello = {
    "type": "hello",
    "protocol": 1,
    "binary": {"path": "hostile", "version": "0"},
    "diagnostics": [],
    "capabilities": CAPS,
}
out.write(json.dumps(hello).encode() + b"\n")
text = b"x" * (1 << 20)
noise = b"noise " * 10000 + b"\n"
for seq in range(1, int(os.environ.get("HOSTILE_EVENTS_MIB", "400")) + 1):
    out.write(b'{"type":"event","seq":%d,"name":"output","data":{"turn":"t","text":"%s"}}\n' % (seq, text))
    err.write(noise)
# A frame that never ends: the client must give up at 40 MiB.
out.write(b'{"id":"1","result":"')
chunk = b"y" * (1 << 20)
for _ in range(48):
    out.write(chunk)
signal.pause()  # and never exit by itself
