"""Where the loop thread's time goes per small event, with no child and no
I/O: the same batch (200 events of 200 B text, as koma-sim's bench mode
sends them) taken apart step by step on this thread.

    python bench/per_event.py            (about 2 seconds)
    python bench/per_event.py --smoke    a few rounds, to show it still runs

  json.loads      the one parse of a batch, per event
  + objects       and the event objects
  events()        koma_sdk's events() over a stub native client that hands
                  out that batch again and again: the parse, the objects,
                  the counting and the iterator, with no wake and no native
                  work (what the loop pays per event at the least)

The differences between the lines are each step's share. The workloads in
run.py add the wakes, the native calls and the child."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from koma_sdk import _native
from koma_sdk._stream import STRIDE, ClientStream
from koma_sdk._surface import EVENT_CLASSES

COUNT = 200
ROUNDS = 5 if "--smoke" in sys.argv else 500
TEXT = "x" * 200


def batch_bytes() -> bytes:
    items: list[Any] = []
    for i in range(COUNT):
        data = {"turn": "bench", "text": TEXT}
        line = json.dumps({"type": "event", "seq": i, "name": "output", "data": data}, separators=(",", ":"))
        items += [i, "output", data, len(line) + 1]
    return json.dumps(items, separators=(",", ":")).encode()


class StubNative:
    """What ClientStream calls on the native client, with the same batch every time."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.slots = memoryview(bytearray(4 * 8)).cast("I")

    def take_events(self, wait: bool) -> Any:
        # Counted, revocable, at epoch 0: as the core lends the client's own stream's batches.
        self.slots[_native.COUNTER_LAYOUT["BATCH_EPOCH"]] = 0
        self.slots[_native.COUNTER_LAYOUT["BATCH_COUNTING"]] = _native.COUNTING["REVOCABLE"]
        return (0, self.data, [])

    def counters(self) -> Any:
        return self.slots

    def unwant_events(self) -> None:
        pass


class StubBackend:
    def future(self) -> Any:
        return asyncio.get_running_loop().create_future()


def per_event(seconds: float) -> float:
    return seconds / (COUNT * ROUNDS) * 1e6


def main() -> None:
    data = batch_bytes()
    loads = json.loads
    t = time.perf_counter()
    for _ in range(ROUNDS):
        loads(data)
    parse = per_event(time.perf_counter() - t)

    t = time.perf_counter()
    for _ in range(ROUNDS):
        batch = loads(data)
        for i in range(0, len(batch), STRIDE):
            EVENT_CLASSES[batch[i + 1]](batch[i], batch[i + 2])
    objects = per_event(time.perf_counter() - t)

    async def through_queue() -> float:
        backend = StubBackend()
        queue = ClientStream(StubNative(data), lambda: backend)  # type: ignore[arg-type]
        n = 0
        t = time.perf_counter()
        async for _e in queue.stream:
            n += 1
            if n == COUNT * ROUNDS:
                break
        return per_event(time.perf_counter() - t)

    queue = asyncio.run(through_queue())

    print(f"per event of {len(data) // COUNT} B in the batch, {COUNT * ROUNDS:,} events:")
    print(f"  json.loads          {parse:5.2f} us")
    print(f"  + event objects     {objects:5.2f} us")
    print(f"  events()            {queue:5.2f} us")


if __name__ == "__main__":
    main()
