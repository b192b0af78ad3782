"""Long strings (4 KiB and more) are cut out of frames by the core; what the
application gets must be exactly what json.loads gives, whatever the string
holds and wherever it sits, down to the Python type of every number (the
twin of long-strings.test.mjs, with a Python peer)."""

from __future__ import annotations

import gc
import json
import math
import sys
from typing import Any

import pytest

from helpers import PEERS, events_error, last_json, linux_proc, peer, raises, run_python

sys.path.insert(0, str(PEERS))
from long_strings_cases import CASES  # noqa: E402

from koma_sdk import Client, KomaError  # noqa: E402

pytestmark = pytest.mark.anyio

PEER = peer("long_strings.py")


def same(got: Any, want: Any, where: str = "$") -> None:
    """Equal, and of the same type at every level (1 and 1.0 and True differ)."""
    assert type(got) is type(want), f"{where}: {type(got).__name__} where json.loads gives {type(want).__name__}"
    if isinstance(want, dict):
        assert list(got) == list(want), f"{where}: keys {list(got)[:5]} != {list(want)[:5]}"
        for k in want:
            same(got[k], want[k], f"{where}.{k[:20]}")
    elif isinstance(want, list):
        assert len(got) == len(want), f"{where}: {len(got)} items != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want, strict=False)):
            same(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert got == want and math.copysign(1, got) == math.copysign(1, want), f"{where}: {got!r} != {want!r}"
    else:
        assert got == want, f"{where}: differs ({len(str(got))} vs {len(str(want))} characters)"


def expected() -> list[Any]:
    return [json.loads(t) for _, t in CASES]


async def test_long_strings_in_results_and_events_are_what_json_loads_gives() -> None:
    c = Client(PEER)
    try:
        same(await c.request("cases"), expected())
        for i, (name, _) in enumerate(CASES):
            got = await c.request("case", {"i": i})
            try:
                same(got, expected()[i])
            except AssertionError as e:
                raise AssertionError(f"result of case {name!r}: {e}") from None
        count = await c.request("emit")
        assert count == {"count": len(CASES)}
        events = []
        async for e in c.events():
            events.append(e)
            if len(events) == len(CASES):
                break
        for i, e in enumerate(events):
            assert e.name == "tool_result"
            want = {"turn": "t1", "call": f"c{i}", "output": expected()[i], "error": False}
            try:
                same(e.data, want)
            except AssertionError as err:
                raise AssertionError(f"event of case {CASES[i][0]!r}: {err}") from None
        gc.collect()
        same([e.data["output"] for e in events], expected())
    finally:
        await c.close()


async def test_a_long_remote_message_and_a_long_string_outside_data() -> None:
    c = Client(PEER)
    try:
        e = await raises(c.request("fail"))
        assert e.code == "remote"
        assert e.remote is not None
        assert (e.remote.code, e.remote.message) == ("busy", "m" * 6000)
        answer = await c.request("stray")
        assert answer == {}
        async for ev in c.events():
            assert (ev.type, ev.seq, ev.name, ev.data) == ("event", 1, "output", {"turn": "t1", "text": "hi"})
            assert not hasattr(ev, "extra")
            break
    finally:
        await c.close()


async def test_a_control_character_inside_a_long_string_is_a_protocol_error() -> None:
    c = Client(PEER)
    try:
        assert (await raises(c.request("broken"))).code == "delivery_unknown"
        fatal, _ = await events_error(c)
        assert isinstance(fatal, KomaError) and fatal.code == "protocol_error"
        assert "control character" in str(fatal), str(fatal)
    finally:
        await c.close()


def test_a_short_long_string_does_not_keep_its_long_line_alive() -> None:
    linux_proc("the resident memory (statm)")
    r = run_python(f"""
import asyncio, gc
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
async def main():
    c = Client({PEER!r})
    await c.probe()
    await c.request("blobpad", {{"blob": 1 << 20, "pad": 1 << 20}})
    gc.collect()
    before = rss()
    kept = []
    for _ in range(8):
        kept.append((await c.request("blobpad", {{"blob": 2 << 20, "pad": 30 << 20}}))["blob"])
    gc.collect()
    grew = rss() - before
    await c.close()
    print(json.dumps({{"grew": grew, "ok": all(s == "b" * (2 << 20) for s in kept)}}))
asyncio.run(main())
""")
    assert r.returncode == 0, r.stderr
    out = last_json(r.stdout)
    assert out["ok"] is True
    # Kept: 8 x 2 MiB. Had each string kept its 32 MiB line alive: 256 MiB.
    assert out["grew"] < 96 * 2**20, f"RSS grew by {out['grew'] / 2**20:.1f} MiB keeping eight 2 MiB strings"
