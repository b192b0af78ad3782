#!/usr/bin/env python3
"""A peer that answers with long strings (see long_strings_cases.py):
cases        -> an array of every case's value
case {i}     -> case i's value itself
emit         -> one tool_result event per case (output: the case), then {count}
fail         -> a remote error whose message is 6,000 bytes
broken       -> an event whose long string holds a raw control character
stray        -> an event with a long string outside `data` (a field the client drops)
blobpad {blob, pad} -> {blob: "b" * blob, pad: "p" * pad}
"""

import json
import os
import sys

# Beside this file, whether or not the interpreter puts the script's folder on
# the path (Windows' embeddable CPython, which the wine row runs, does not).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from long_strings_cases import CASES, event_line  # noqa: E402

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
CAPS += ["cases", "case", "emit", "fail", "stray", "broken", "blobpad"]
# UTF-8 whatever the locale (Windows' pipes would take the ANSI code page), and no newline translation.
out = open(sys.stdout.fileno(), "w", encoding="utf-8", newline="\n", closefd=False)


def send(line: str) -> None:
    out.write(line + "\n")
    out.flush()


send(
    json.dumps(
        {
            "type": "hello",
            "protocol": 1,
            "binary": {"path": "long-strings", "version": "0"},
            "diagnostics": [],
            "capabilities": CAPS,
        }
    )
)
seq = 0
for raw in sys.stdin:
    req = json.loads(raw)
    rid = json.dumps(req["id"])
    method = req["method"]
    params = req.get("params") or {}
    if method == "cases":
        send(f'{{"id":{rid},"result":[{",".join(c[1] for c in CASES)}]}}')
    elif method == "case":
        send(f'{{"id":{rid},"result":{CASES[params["i"]][1]}}}')
    elif method == "emit":
        # Several events per write: their strings share one batch.
        lines = []
        for i in range(len(CASES)):
            seq += 1
            lines.append(event_line(seq, i))
        send("\n".join(lines))
        send(f'{{"id":{rid},"result":{{"count":{len(CASES)}}}}}')
    elif method == "blobpad":
        # A short long string beside a much longer one, in one result.
        send(f'{{"id":{rid},"result":{{"blob":"{"b" * params["blob"]}","pad":"{"p" * params["pad"]}"}}}}')
    elif method == "fail":
        send(f'{{"id":{rid},"error":{{"code":"busy","message":"{"m" * 6000}"}}}}')
    elif method == "stray":
        seq += 1
        send(
            f'{{"type":"event","seq":{seq},"name":"output","extra":"{"q" * 6000}","data":{{"turn":"t1","text":"hi"}}}}'
        )
        send(f'{{"id":{rid},"result":{{}}}}')
    elif method == "broken":
        seq += 1
        send(
            f'{{"type":"event","seq":{seq},"name":"output","data":{{"turn":"t1","text":"{"v" * 3000}\u0007{"v" * 3000}"}}}}'
        )
    elif method == "detach":
        send(f'{{"id":{rid},"result":{{}}}}')
        sys.exit(0)
    else:
        send(f'{{"id":{rid},"error":{{"code":"unknown_method","message":"no"}}}}')
