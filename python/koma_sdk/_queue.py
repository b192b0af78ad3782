"""The client's one event queue: the iterator of `events()`, and the routing
of a Turn's events to it. This is the Node package's `src/events.js` written
once more, rule for rule, in Python (why not in the core: see the README's
"The turn layer, and where its rules live").

Per event it is a list index, a check of the overflow epoch, a count and
the event object, with no native call. The native client is called once
per batch (`take_events`, a flat JSON array of seq, name, data and the
frame's size for each event, parsed by one `json.loads`) and the client's
wake calls `woke()` when events become ready.

`shared` is memory shared with the core's reader, as 32-bit slots: EPOCH
(the reader's: an overflow bumps it, revoking what was handed over), TAKEN
and TAKEN_BYTES (ours: the running counts of events, and of their frames'
bytes, that the application has taken). An event counts against the bound
of 256 events and 64 MiB until it is taken: yielded by `events()` or by a
Turn.

Routing, while Turns are open: an event whose `data.turn` is an open Turn's
id goes to that Turn; a `state` or `diagnostic` event goes to the Turn whose
turn has started and not finished, if there is one; everything else stays,
in order, for `events()`. While a Turn waits for its id (its submit is not
answered yet) nothing is routed, so no event is placed before it is known
whose it is.
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Callable, List, Optional, Protocol, Union

from . import _native
from ._backend import Backend, Future, next_item, serve
from ._errors import KomaError
from ._lift import put_back
from ._native import NativeClient
from ._types import EVENT_CLASSES, EventItem, Overflow

EPOCH = _native.SLOT_EPOCH
TAKEN = _native.SLOT_TAKEN
TAKEN_BYTES = _native.SLOT_TAKEN_BYTES
STRIDE = _native.BATCH_STRIDE
MASK = 0xFFFFFFFF

_loads = json.loads


class _Done:
    """The end of the stream (`events()` then stops)."""


DONE = _Done()


class RoutedTurn(Protocol):
    """What the queue needs of an open Turn (see `_turn.py`)."""

    id: Optional[str]  # None: not known yet (routing waits); "" if there is none
    started: bool
    finished: bool

    def accept(self, value: EventItem, size: int, epoch: int) -> None: ...

    def overflow(self, report: Overflow) -> None: ...

    def end(self, error: Optional[BaseException]) -> None: ...


class _Held:
    """An item routed past `events()` while Turns were open (size < 0: the
    overflow report, not counted)."""

    __slots__ = ("value", "size", "epoch")

    def __init__(self, value: EventItem, size: int, epoch: int) -> None:
        self.value = value
        self.size = size
        self.epoch = epoch


def _event(batch: List[Any], i: int) -> EventItem:
    cls: Any = EVENT_CLASSES[batch[i + 1]]
    event: EventItem = cls(batch[i], batch[i + 2])
    return event


class EventQueue:
    def __init__(self, native: NativeClient, bind: Callable[[], Backend]) -> None:
        #: The client's loop (bound on first use).
        self.bind = bind
        self._native = native
        self._shared: Any = None  # the counters' memoryview, on first use
        # The batch being taken from.
        self._batch: List[Any] = []
        self._index = 0
        self._epoch = 0
        # Once the stream has ended: DONE, or the error to raise.
        self._end: Union[None, _Done, BaseException] = None
        self._held: List[_Held] = []
        self._held_at = 0
        # events() calls waiting for an item.
        self._waiting: List[Future] = []
        self.turns: List[RoutedTurn] = []
        # take_events found nothing: the next wake should serve.
        self._events_waiting = False
        self._kicked = False
        self.stream = EventStream(self)

    # ---- counting and refilling

    def _counters(self) -> Any:
        if self._shared is None:
            self._shared = self._native.counters()
        return self._shared

    def count(self, size: int) -> None:
        shared = self._shared
        shared[TAKEN] = (shared[TAKEN] + 1) & MASK
        shared[TAKEN_BYTES] = (shared[TAKEN_BYTES] + size) & MASK

    def current_epoch(self) -> int:
        """The epoch a routed event must still have to be taken."""
        value: int = self._counters()[EPOCH]
        return value

    def _refill(self) -> bool:
        """Refill the batch from the native client: true if there is more to take now."""
        shared = self._counters()
        got = self._native.take_events(True)
        if got is None:
            self._events_waiting = True
            return False
        kind = got[0]
        if kind == 0:
            _, data, lifts, epoch = got
            batch = _loads(data)
            for entry in lifts:
                put_back(batch, entry)
            self._batch = batch
            self._index = 0
            self._epoch = epoch
            return True
        if kind == 1:
            # The overflow report: it ended the pause. events() gets it in
            # order; open Turns learn of it at once.
            report = Overflow(got[1])
            self._held.append(_Held(report, -1, shared[EPOCH]))
            for t in list(self.turns):
                t.overflow(report)
            return True
        error = got[1]
        self._end = DONE if error is None else error
        self._end_turns(error)
        return False

    def _end_turns(self, error: Optional[BaseException]) -> None:
        turns, self.turns = self.turns, []
        for t in turns:
            t.end(error)

    def _owner_of(self, name: str, data: Any) -> Union[None, bool, RoutedTurn]:
        """Whose is an event: a Turn, None (events()'s), or False (not known
        yet: a Turn waits for its id)."""
        turns = self.turns
        for t in turns:
            if t.id is None:
                return False
        if name == "state" or name == "diagnostic":
            for t in turns:
                if t.started and not t.finished:
                    return t
            return None
        turn_id = data.get("turn") if isinstance(data, dict) else None
        if isinstance(turn_id, str):
            for t in turns:
                if t.id == turn_id:
                    return t
        return None

    # ---- taking

    def _take(self) -> Union[None, _Done, EventItem]:
        """The next item for events(), DONE, or None (nothing now; the wake
        serves later). While Turns are open, their events are routed to
        them on the way. Raises the client's fatal error once everything
        before it has been taken."""
        while True:
            batch = self._batch
            i = self._index
            if i < len(batch) and not self._held:
                # The common case first: the next event of the batch.
                shared = self._shared
                if shared[EPOCH] != self._epoch:
                    self._batch = []  # an overflow revoked this batch
                    self._index = 0
                    continue
                if self.turns:
                    owner = self._owner_of(batch[i + 1], batch[i + 2])
                    if owner is False:
                        return None
                    if owner is not None:
                        self._route_to(owner)  # type: ignore[arg-type]
                        continue
                self._index = i + STRIDE
                self.count(batch[i + 3])
                return _event(batch, i)
            held = self._held
            while self._held_at < len(held):
                h = held[self._held_at]
                self._held_at += 1
                if h.size < 0:
                    return h.value
                if h.epoch != self._shared[EPOCH]:
                    continue  # revoked by an overflow
                self.count(h.size)
                return h.value
            if held:
                self._held = []
                self._held_at = 0
                continue
            end = self._end
            if end is not None:
                if isinstance(end, _Done):
                    return DONE
                raise end
            try:
                if not self._refill():
                    if self._end is None:
                        return None
                    continue  # the end came: DONE, or its error raised above
            except KomaError as error:
                self._end = error
                self._end_turns(error)
                raise

    def _route_to(self, owner: RoutedTurn) -> None:
        batch = self._batch
        i = self._index
        value = _event(batch, i)
        self._index = i + STRIDE
        owner.accept(value, batch[i + 3], self._epoch)

    def _pump(self) -> None:
        """While Turns are open, route everything that has come: a Turn's
        events to it, the rest into `held` for events() (still counted
        until taken)."""
        while self.turns:
            batch = self._batch
            i = self._index
            if i < len(batch):
                if self._shared[EPOCH] != self._epoch:
                    self._batch = []
                    self._index = 0
                    continue
                owner = self._owner_of(batch[i + 1], batch[i + 2])
                if owner is False:
                    return
                if owner is not None:
                    self._route_to(owner)  # type: ignore[arg-type]
                    continue
                self._held.append(_Held(_event(batch, i), batch[i + 3], self._epoch))
                self._index = i + STRIDE
                continue
            if self._end is not None:
                return
            try:
                if not self._refill():
                    return
            except KomaError as error:
                self._end = error
                self._end_turns(error)
                return

    def _serve(self) -> None:
        """Serve the events() calls that wait."""
        serve(self._waiting, self._take)

    def settle(self) -> None:
        """Events are ready (or the end): route and serve."""
        self._pump()
        self._serve()
        if not self._waiting and not self.turns:
            self._native.unwant_events()  # nobody wants more

    def woke(self) -> None:
        """The client's wake: serve if the queue was waiting for events."""
        if self._events_waiting:
            self._events_waiting = False
            self.settle()

    # ---- what the turn layer uses

    def open(self, turn: RoutedTurn) -> None:
        """Route `turn`'s events to it from now on (its id is None until known)."""
        self._counters()
        self.turns.append(turn)
        end = self._end
        if end is not None:
            self.turns.remove(turn)
            turn.end(None if isinstance(end, _Done) else end)

    def close(self, turn: RoutedTurn) -> None:
        """Stop routing to `turn` (its turn finished, or it failed)."""
        if turn in self.turns:
            self.turns.remove(turn)
        self.kick()

    def kick(self) -> None:
        """Something changed (a Turn learned its id, or closed): route and
        serve again, soon (this may be called while routing)."""
        if self._kicked:
            return
        self._kicked = True
        self.bind().call_soon(self._kicked_now)

    def _kicked_now(self) -> None:
        self._kicked = False
        self.settle()


class EventStream:
    """`client.events()`: an async iterator over the client's one queue.
    Items are events (`.type == "event"`, with `.seq`, `.name`, `.data`) and
    the one overflow report (`.type == "overflow"`, `.dropped`). It ends
    after detach or close, and raises the client's fatal error after a
    failure, once the events before it have been taken."""

    __slots__ = ("_queue",)

    def __init__(self, queue: EventQueue) -> None:
        self._queue = queue

    def __aiter__(self) -> AsyncIterator[EventItem]:
        return self

    async def __anext__(self) -> EventItem:
        q = self._queue
        # At once when nobody waits before us and an item is there (the
        # common case: no loop check and no second coroutine per event).
        # Only a wait needs the loop: binding to it then watches the wake
        # descriptor, which stays readable until the next take.
        result = None if q._waiting else q._take()
        if result is None:
            result = await next_item(q._waiting, q._take, q.bind())
        if isinstance(result, _Done):
            raise StopAsyncIteration
        return result
