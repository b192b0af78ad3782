#!/usr/bin/env python3
"""A peer whose stderr and stdout carry terminal escape sequences: a valid
hello, then, on the first request, an escape-laden line that breaks the
protocol."""

import json
import sys

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
hello = {
    "type": "hello",
    "protocol": 1,
    "binary": {"path": "escapes", "version": "0"},
    "diagnostics": [],
    "capabilities": CAPS,
}
sys.stdout.write(json.dumps(hello) + "\n")
sys.stdout.flush()
sys.stderr.write("warning \x1b]0;pwned\x07 \x1b[2J\x1b[31mred\n")
sys.stderr.flush()
if sys.stdin.readline():
    sys.stdout.write("\x1b[31mINFO\x1b[0m " + "z" * 5000 + "\x1b[2J\n")
    sys.stdout.flush()
sys.stdin.read()
