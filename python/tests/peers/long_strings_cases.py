"""JSON texts with long strings (4 KiB and more: what the core lifts out of a
frame instead of parsing it; 1 MiB and more), and numbers beside them whose
Python type json.loads decides. Shared by the long-strings peer and its test."""

from __future__ import annotations

import json


def big(unit: str, nbytes: int) -> str:
    """`unit` repeated to at least `nbytes` bytes of UTF-8."""
    size = len(unit.encode())
    return unit * -(-nbytes // size)


def text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


CASES: list[tuple[str, str]] = [
    ("plain ASCII", text(big("a", 5000))),
    ("just under the lift size", text(big("b", 4095))),
    ("exactly the lift size", text(big("c", 4096))),
    ("escapes", text(big("line\n", 5000) + '"quoted"\t\\ \u0001')),
    ("Latin-1, raw", text(big("é", 6000))),
    ("Latin-1, escaped", '"' + big("caf\\u00e9 ", 6000) + '"'),
    ("wide characters, raw", text(big("☃ 😀 ", 6000))),
    ("wide characters, escaped", '"' + big("\\u2603 \\ud83d\\ude00 ", 8000) + '"'),
    (
        "nested in objects and arrays",
        text(
            {
                "a": [1, {"b": big("x", 5000)}, [big("y", 4500), "short"]],
                "": big("z", 4100),
                "0": big("0", 4200),
                'k"ey': big("k", 4300),
                "n": None,
                "t": True,
                "f": -1.5e3,
            }
        ),
    ),
    ("a duplicate key on the path (the last one wins)", '{"d":{"t":' + text(big("d", 5000)) + '},"d":{"x":1}}'),
    ("a duplicate key beside the path", '{"a":{"x":1,"x":2},"t":' + text(big("e", 5000)) + "}"),
    ("a duplicate key at the string itself", '{"t":' + text(big("f", 5000)) + ',"t":"last"}'),
    ("a __proto__ key on the path", '{"__proto__":{"t":' + text(big("p", 5000)) + "}}"),
    ("whitespace between tokens", '{ "a" : [ ' + text(big("w", 5000)) + ' , 1 ] , "b" : { } }'),
    ("the value is the string", text(big("s", 9000))),
    ("a long key", "{" + text(big("q", 5000)) + ":1}"),
    (
        "numbers beside a long string",
        '{"t":'
        + text(big("n", 5000))
        + ',"float":1.0,"neg":-0.0,"small":1e-7,"int":12,"big":123456789012345678901234567890}',
    ),
    ("1 MiB and more, ASCII", text(big("m", 1_200_000))),
    ("1 MiB and more, Latin-1", text(big("é", 2_200_000))),
    ("1 MiB and more, wide characters", text(big("☃", 1_800_000))),
    ("many strings", text([big(chr(65 + i % 26), 4096 + i) for i in range(40)])),
]


def event_line(seq: int, i: int) -> str:
    """Case `i` as an event: the `output` of a tool_result, which is any JSON."""
    return f'{{"type":"event","seq":{seq},"name":"tool_result","data":{{"turn":"t1","call":"c{i}","output":{CASES[i][1]},"error":false}}}}'
