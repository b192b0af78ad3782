"""The shared counters as an interface: `_stream.Cursor` passes the cases of
testdata/counting.json against the core's own side of the counters (the
native `CountingRig`: the core's counters, bound and epoch, its batches lent
as a client lends them), as `lib/stream.js`'s Cursor does and as the core's
own cursor does (crates/koma-transport/tests/counting.rs); see
docs/python-internals.md, "The shared counters"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from koma_sdk import _native
from koma_sdk._stream import END, Cursor
from koma_sdk._types import Overflow

CASES = json.loads((Path(__file__).resolve().parents[2] / "testdata" / "counting.json").read_text())["cases"]
SLOTS = _native.COUNTER_LAYOUT


def test_every_slot_and_way_of_counting_the_cases_name_is_the_cores() -> None:
    named = {
        name for case in CASES for step in case["steps"] for name in {**step.get("counters", {}), **step.get("set", {})}
    }
    assert named <= set(SLOTS), named - set(SLOTS)
    assert {"EPOCH", "BATCH_EPOCH", "BATCH_COUNTING", "TAKEN", "TAKEN_BYTES"} <= set(SLOTS)
    ways = {step["counting"] for case in CASES for step in case["steps"] if "lend" in step}
    assert ways == set(_native.COUNTING.values()), ways


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_cursor_counts_as_specified(case: dict[str, Any]) -> None:
    rig = _native.CountingRig()
    shared = rig.counters()
    cursor = Cursor(rig.take, rig.counters)
    for step in case["steps"]:
        if "lend" in step:
            rig.lend(step["lend"], step["counting"])
        elif "take" in step:
            got = []
            for _ in range(step["take"]):
                item = cursor.next()
                if item is not None and item is not END and not isinstance(item, Overflow):
                    got.append(item.seq)
            assert got == step["got"], step
        elif "overflow" in step:
            rig.overflow()
        elif "release" in step:
            cursor.release()
        elif "set" in step:
            for name, value in step["set"].items():
                shared[SLOTS[name]] = value
        else:
            held = {name: shared[SLOTS[name]] for name in step["counters"]}
            assert held == step["counters"], step
