#!/usr/bin/env python3
"""Write the hand-made seeds of the `frames` fuzz target into corpus/frames/.

A seed is one byte k (chunk-length count, modulo 16), k chunk lengths of one
byte each (0 = an empty read), then the stdout stream. Run from fuzz/:
    python3 seeds/make_seeds.py corpus/frames
then `cargo fuzz cmin frames` keeps what adds coverage.
"""
import hashlib, os, sys

HELLO = b'{"type":"hello","protocol":1,"binary":{"path":"/usr/local/bin/koma","version":"0.4.6"},"diagnostics":[],"capabilities":["create","resume","state","submit","enqueue","interrupt","interrupt_and_submit","approve","detach","configure"]}'
STATE = b'{"session":"s-1","status":"idle","turn":null,"queued":0,"model":null}'
LINES = [
    HELLO,
    b'{"type":"hello","protocol":2}',
    b'{"type":"hello","protocol":"1","binary":{"path":"p","version":"v"},"diagnostics":[],"capabilities":[]}',
    b'{"type":"hello","protocol":1,"binary":{"path":"p","version":4},"diagnostics":{},"capabilities":[1]}',
    b'{"type":"hello"}',
    b'{"id":"1","result":{"session":"s-1","state":' + STATE + b'}}',
    b'{"id":"2","result":null}',
    b'{"id":"3","result":{"turn":"t-1"},"extra":[1,{"x":2}]}',
    b'{"id":"4","error":{"code":"busy","message":"a turn is running","data":{"turn":"t"}}}',
    b'{"id":"5","error":{"code":"busy","message":"\\u001b[31mred"}}',
    b'{"id":"6","error":"busy"}',
    b'{"id":"7","result":1,"error":{"code":"x","message":"y"}}',
    b'{"id":"8"}',
    b'{"id":8,"result":1}',
    b'{"id":"","result":[]}',
    b'{"type":"event","seq":1,"name":"state","data":' + STATE + b'}',
    b'{"type":"event","seq":2,"name":"turn_started","data":{"turn":"t-1","text":"hi"}}',
    b'{"type":"event","seq":3,"name":"output","data":{"turn":"t-1","text":"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"}}',
    b'{"type":"event","seq":4,"name":"tool_call","data":{"turn":"t-1","call":"c","tool":"sh","input":{"cmd":"ls"}}}',
    b'{"type":"event","seq":5,"name":"tool_result","data":{"turn":"t-1","call":"c","output":"x","error":false}}',
    b'{"type":"event","seq":6,"name":"approval_requested","data":{"turn":"t-1","approval":"a","tool":"sh","input":null}}',
    b'{"type":"event","seq":7,"name":"turn_finished","data":{"turn":"t-1","status":"completed"}}',
    b'{"type":"event","seq":8,"name":"diagnostic","data":{"level":"info","message":"m"}}',
    b'{"type":"event","seq":9,"name":"mystery"}',
    b'{"type":"event","seq":0,"name":"output","data":{}}',
    b'{"type":"event","seq":1.5,"name":"output","data":{}}',
    b'{"type":"event","seq":"1","name":"output","data":{}}',
    b'{"type":"event","seq":18446744073709551616,"name":"output","data":{}}',
    b'{"type":"event","seq":1,"name":"output"}',
    b'{"type":"event","seq":1,"name":7,"data":{}}',
    b'{"type":"bogus"}',
    b'{"type":null,"id":"1","result":1}',
    b'{"foo":1}',
    b'{"type":"event","type":"hello"}',
    b' \t{"id":"1","result":1}',
    b'{"id":"1","result":1} {}',
    b'{',
    b'[1,2,3]',
    b'42',
    b'"s"',
    b'INFO starting worker',
    b'\x1b[31mred\x07 \xe2\x80\xae bidi \xc2\x9b c1',
    b'',
    b'\xef\xbb\xbf{"type":"hello"}',
    b'{"id":"1","result":"\xff\xfe"}',
    b'{"id":"1","result":"\xe2\x82"}',
    b'{"id":"1","result":"\xed\xa0\x80"}',
    b'{"id":"1","result":"\\ud800"}',
    b'{"id":"1","result":"' + b'x' * 300 + b'"}',
    b'{"id":"1","result":"' + '\u00e9'.encode() * 150 + b'"}',
    b'\x01' * 250,
]

def seed(sizes, payload):
    assert len(sizes) < 16
    return bytes([len(sizes)]) + bytes(sizes) + payload

def main(out):
    os.makedirs(out, exist_ok=True)
    seeds = []
    for line in LINES:
        seeds.append(seed([], line + b'\n'))
        seeds.append(seed([3, 1], line + b'\r\n'))
    stream = b'\n'.join(LINES[:25]) + b'\n'
    seeds += [
        seed([], stream),
        seed([1], stream),
        seed([7, 0, 255, 2], stream),
        seed([], HELLO + b'\n' + LINES[5] + b'\r\n' + LINES[16] + b'\n'),
        seed([], LINES[5] + b'\n\n' + LINES[6] + b'\n'),       # blank line
        seed([], LINES[5] + b'\r\r\n'),                          # two CRs
        seed([], LINES[5] + b'\r'),                              # CR then end
        seed([], LINES[5]),                                      # no newline at the end
        seed([2], b'\r\n'),
        seed([], b'\n'),
        seed([5, 1], LINES[17] + b'\n'),                          # splits inside UTF-8
        seed([200, 200], b'{"id":"1","result":"' + b'y' * 600 + b'"}\n'),
    ]
    for s in seeds:
        name = hashlib.sha1(s).hexdigest()
        with open(os.path.join(out, name), 'wb') as f:
            f.write(s)
    print(f"{len(seeds)} seeds in {out}")

if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else 'corpus/frames')
