#!/usr/bin/env python3
"""Write the hand-made seeds of the `lift` fuzz target (default: seeds/lift/).

A seed is one byte that sets the lift threshold (min = 1 + byte % 16, so the
ASCII digit d gives min d + 1), then one JSON line. Run from fuzz/:
    python3 seeds/make_lift_seeds.py [DIR]
"""
import os, sys

SEEDS = {
    # threshold digit, JSON
    "event_output": b'3{"type":"event","seq":7,"name":"output","data":{"turn":"t-1","text":"hello there, world"}}',
    "nested": b'3{"a":[1,{"b":"0123456789"},["","abcdefghij"]],"c":{"d":{"e":"klmnopqrst"}},"n":[[[[]]]]}',
    "top_string": b'9"0123456789abc"',
    "escapes": b'4{"t":"line one\\nline \\"two\\"\\t\\u00e9\\/\\b\\f\\r\\\\","u":"\\u0000\\u001f\\u007f"}',
    "surrogates": b'4["snow \xe2\x98\x83 and \\ud83d\\ude00 here","\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80","\\uD83D\\uDE00\\uDBFF\\uDFFF"]',
    "lone_surrogate_lifted": b'4{"t":"\\udc00 lone trail","v":"ok long enough"}',
    # lone surrogates left in the skeleton: IgnoredAny accepts them, Value does not
    "lone_surrogate_kept": b'6{"o":{"k\\ud800":"sh"},"v":"ok long enough","s":"\\udc00"}',
    "latin1": b'4{"t":"caf\\u00e9 caf\\u00e9 caf\xc3\xa9 \xc3\xbf\xc2\xa0"}',
    "escaped_keys": b'4{"k\\"ey\\u0041":"0123456789","\\u0061":{"b":"abcdefgh"}}',
    "dup_on_path": b'4{"d":{"t":"0123456789"},"d":{"x":1},"\\u0064":2}',
    "dup_elsewhere": b'4{"a":{"x":1,"x":2},"t":"0123456789","arr":[{"y":1,"y":"z"}]}',
    "dup_value": b'4{"t":"0123456789","t":1,"t":"abcdefghij"}',
    "proto": b'4{"__proto__":{"t":"0123456789"},"o":{"\\u005f_proto__":"abcdefghij"},"p":"__proto__ long"}',
    "whitespace": b'4 \t\r\n{ "a" : [ true , null , -1.5e3 , 0 , 1E+2 , false ] ,\n\t"t" : "0123456789" } \r\n',
    "invalid_unterminated": b'4{"t":"0123456789',
    "invalid_control": b'4{"t":"01234\x0156789"}',
    "invalid_escape": b'4{"t":"01234\\x56789","u":"\\u12"}',
    "invalid_structure": b'4{"a" "0123456789"}["abcdefgh":"ijklmnop",]',
    "numbers": b'4[1e400,-0,12345678901234567890123,0.1e-999,"0123456789"]',
}

def deep(n):
    return b'4' + b'[' * n + b'"0123456789"' + b']' * n

def wide(n):
    return b'4{' + b''.join(b'"k%d":1,' % k for k in range(n)) + b'"t":"0123456789"}'

SEEDS["deep_127"] = deep(127)
SEEDS["deep_128"] = deep(128)
SEEDS["deep_129"] = deep(129)
SEEDS["keys_1023"] = wide(1023)
SEEDS["keys_1024"] = wide(1024)

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "lift")
os.makedirs(out, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
print(f"{len(SEEDS)} seeds in {out}")
