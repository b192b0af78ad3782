"""The shared counters as an interface: `_stream.Cursor` passes the cases of
testdata/counting.json, which `lib/stream.js`'s Cursor passes too
(docs/python-internals.md, "The shared counters")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from koma_sdk import _native
from koma_sdk._stream import END, Cursor
from koma_sdk._types import Overflow

CASES = json.loads((Path(__file__).resolve().parents[2] / "testdata" / "counting.json").read_text())["cases"]
SLOTS = {name[len("SLOT_") :]: getattr(_native, name) for name in dir(_native) if name.startswith("SLOT_")}


class Core:
    """What the core does around a Cursor: lends batches, writing their
    epoch and counting as it does, and bumps the epoch on an overflow."""

    def __init__(self) -> None:
        self.shared = memoryview(bytearray(4 * (max(SLOTS.values()) + 1))).cast("I")
        self.lent: list[tuple[list[int], int]] = []
        self.seq = 0

    def lend(self, sizes: list[int], counting: int) -> None:
        batch: list[Any] = []
        for size in sizes:
            self.seq += 1
            batch += [self.seq, "output", {"turn": "t-1", "text": "x"}, size]
        self.lent.append((batch, counting))

    def take(self) -> tuple[Any, ...] | None:
        if not self.lent:
            return None
        batch, counting = self.lent.pop(0)
        self.shared[SLOTS["BATCH_EPOCH"]] = self.shared[SLOTS["EPOCH"]]
        self.shared[SLOTS["BATCH_COUNTING"]] = counting
        return (0, json.dumps(batch).encode(), [])


def test_every_slot_the_cases_name_is_the_cores() -> None:
    named = {
        name for case in CASES for step in case["steps"] for name in {**step.get("counters", {}), **step.get("set", {})}
    }
    assert named <= set(SLOTS), named - set(SLOTS)
    assert {"EPOCH", "BATCH_EPOCH", "BATCH_COUNTING", "TAKEN", "TAKEN_BYTES"} <= set(SLOTS)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_cursor_counts_as_specified(case: dict[str, Any]) -> None:
    core = Core()
    cursor = Cursor(core.take, lambda: core.shared)
    for step in case["steps"]:
        if "lend" in step:
            core.lend(step["lend"], step["counting"])
        elif "take" in step:
            got = []
            for _ in range(step["take"]):
                item = cursor.next()
                if item is not None and item is not END and not isinstance(item, Overflow):
                    got.append(item.seq)
            assert got == step["got"], step
        elif "overflow" in step:
            core.shared[SLOTS["EPOCH"]] += 1
        elif "release" in step:
            cursor.release()
        elif "set" in step:
            for name, value in step["set"].items():
                core.shared[SLOTS[name]] = value
        else:
            held = {name: core.shared[SLOTS[name]] for name in step["counters"]}
            assert held == step["counters"], step
