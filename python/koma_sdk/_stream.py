"""A loop's side of one of the core's streams of events: the client's own
(what `events()` reads) or a Turn's. The core decides which stream each
event goes to and how it counts; this module only hands a batch's events
out one by one and counts each in memory shared with the core, with no
native call per event. The native client is called once per batch (a flat
JSON array of seq, name, data and the frame's size for each event, parsed
by one `json.loads`).

How a host counts in the shared memory is an interface of the core's,
specified once in docs/python-internals.md ("The shared counters") and
checked by testdata/counting.json, which `lib/stream.js`'s Cursor passes
too (python/tests/test_counting.py, __test__/counting.test.mjs).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from . import _native
from ._backend import Backend, Future, next_item, serve
from ._lift import put_back
from ._native import NativeClient
from ._surface import EVENT_CLASSES
from ._types import EventItem, Overflow

# The slots and the ways a batch counts are the core's tables (its names, its numbers).
EPOCH = _native.COUNTER_LAYOUT["EPOCH"]
TAKEN = _native.COUNTER_LAYOUT["TAKEN"]
TAKEN_BYTES = _native.COUNTER_LAYOUT["TAKEN_BYTES"]
BATCH_EPOCH = _native.COUNTER_LAYOUT["BATCH_EPOCH"]
BATCH_COUNTING = _native.COUNTER_LAYOUT["BATCH_COUNTING"]
STRIDE = _native.BATCH_STRIDE
MASK = 0xFFFFFFFF
UNCOUNTED = _native.COUNTING["UNCOUNTED"]
REVOCABLE = _native.COUNTING["REVOCABLE"]

_loads = json.loads


class _End:
    """The end of a stream."""


END = _End()
Take = Callable[[], tuple[Any, ...] | None]
#: The shared counters (a writable view of unsigned 32-bit slots), made on first use.
Counters = Callable[[], Any]


class Cursor:
    """The batches of one stream, handed out event by event."""

    __slots__ = ("_take", "_counters", "_shared", "_batch", "_index", "_epoch", "_counting", "_error", "_ended")

    def __init__(self, take: Take, counters: Counters) -> None:
        self._take = take
        self._counters = counters
        self._shared: Any = None  # the counters' memoryview, on first use
        self._batch: list[Any] = []
        self._index = 0
        self._epoch = 0
        self._counting = UNCOUNTED
        self._error: BaseException | None = None
        self._ended = False

    def next(self) -> None | _End | EventItem:
        """The next item, END at the end, or None (nothing now). Raises the
        stream's failure, each time it is asked, once it has ended with one."""
        while True:
            batch = self._batch
            i = self._index
            if i < len(batch):
                self._index = i + STRIDE
                if self._counting:
                    shared = self._shared
                    if shared[EPOCH] == self._epoch:
                        shared[TAKEN] = (shared[TAKEN] + 1) & MASK
                        shared[TAKEN_BYTES] = (shared[TAKEN_BYTES] + batch[i + 3]) & MASK
                    elif self._counting == REVOCABLE:
                        self._batch = []  # an overflow revoked the rest
                        self._index = 0
                        continue
                cls: Any = EVENT_CLASSES[batch[i + 1]]
                event: EventItem = cls(batch[i], batch[i + 2])
                return event
            if self._ended:
                if self._error is not None:
                    raise self._error
                return END
            got = self._take()
            if got is None:
                return None
            kind = got[0]
            if kind == 0:
                shared = self._shared
                if shared is None:
                    shared = self._shared = self._counters()
                _, data, lifts = got
                batch = _loads(data)
                for entry in lifts:
                    put_back(batch, entry)
                self._batch = batch
                self._index = 0
                self._epoch = shared[BATCH_EPOCH]
                self._counting = shared[BATCH_COUNTING]
                continue
            if kind == 1:
                return Overflow(got[1])
            self._ended = True
            self._error = got[1]

    def release(self) -> None:
        """A loop left with events of this batch not handed out: they count
        as taken (they stay, uncounted)."""
        shared = self._shared
        if self._counting and shared is not None and shared[EPOCH] == self._epoch:
            batch = self._batch
            for i in range(self._index, len(batch), STRIDE):
                shared[TAKEN] = (shared[TAKEN] + 1) & MASK
                shared[TAKEN_BYTES] = (shared[TAKEN_BYTES] + batch[i + 3]) & MASK
        self._counting = UNCOUNTED


class ClientStream:
    """The client's own stream: `events()` loops over it (every loop the
    same stream), and the client's wake serves the loops that wait."""

    __slots__ = ("bind", "_native", "_cursor", "_waiting", "_wanted", "stream")

    def __init__(self, native: NativeClient, bind: Callable[[], Backend]) -> None:
        #: The client's loop (bound on first use).
        self.bind = bind
        self._native = native
        self._cursor = Cursor(self._take_native, native.counters)
        self._waiting: list[Future] = []
        # The core found nothing: the next wake should serve.
        self._wanted = False
        self.stream = EventStream(self)

    def _take_native(self) -> tuple[Any, ...] | None:
        got = self._native.take_events(True)
        if got is None:
            self._wanted = True
        return got

    def take(self) -> None | _End | EventItem:
        return self._cursor.next()

    def woke(self) -> None:
        """The client's wake: serve the loops if the stream was waited on."""
        if self._wanted:
            self._wanted = False
            serve(self._waiting, self.take)
            if not self._waiting:
                self._native.unwant_events()  # nobody waits any more


class EventStream:
    """`client.events()`: an async iterator over the client's one stream of
    the events no Turn took. Items are events (`.type == "event"`, with
    `.seq`, `.name`, `.data`) and the one overflow report (`.type ==
    "overflow"`, `.dropped`). It ends after detach or close, and raises the
    client's fatal error after a failure, once the events before it have
    been taken. Leaving one loop over it leaves any other loop going."""

    __slots__ = ("_queue", "_owner")

    def __init__(self, queue: ClientStream, owner: object = None) -> None:
        self._queue = queue
        # The client, kept alive while its stream is held (a loop waiting on
        # it needs the client's wake).
        self._owner = owner

    def __aiter__(self) -> AsyncIterator[EventItem]:
        return self

    async def __anext__(self) -> EventItem:
        q = self._queue
        # At once when nobody waits before us and an item is there (the
        # common case: no loop check and no second coroutine per event).
        result = None if q._waiting else q.take()
        if result is None:
            result = await next_item(q._waiting, q.take, q.bind())
        if isinstance(result, _End):
            raise StopAsyncIteration
        return result
