"""A Turn, as Python holds it: what `client.turn()` returns and what
`client.run()` awaits. The core runs the turn (its submit, which events are
its own, its approvals, its result and how it ends: the core's `turns`
module); this module only speaks Python's idioms around it: awaitables for
its id and result, the async iterator of its events, task cancellation, and
calling `on_approval` (plain or async) and handing its answer to the core.
"""

from __future__ import annotations

import inspect
import json
import weakref
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

from ._args import params as encode_params
from ._args import seconds as seconds_of
from ._backend import Backend, Cancel, Future, Promise, next_item, serve
from ._errors import KomaError
from ._lift import put_back
from ._link import Link, TurnUpdate
from ._native import NativeClient, TurnApproval, TurnEnded, TurnFailure, TurnId
from ._stream import END, Cursor, _End
from ._surface import ApprovalRequestedData, Decision
from ._types import EventItem, TurnResult

ApprovalPolicy = Decision | Callable[[ApprovalRequestedData], Decision | Awaitable[Decision]]


def _value(json_array: bytes, lifts: list[tuple[Any, ...]]) -> Any:
    """A value the core handed over as a one-item JSON array, its long strings put back."""
    root = json.loads(json_array)
    for entry in lifts:
        put_back(root, entry)
    return root[0]


def _approvals(on_approval: Any) -> tuple[str, str]:
    """The approval option as the core reads it (`kind`, `text`)."""
    if on_approval is None:
        return ("none", "")
    if isinstance(on_approval, str):
        return ("text", on_approval)
    if callable(on_approval):
        return ("handler", "")
    return ("other", repr(on_approval))


def _collected(
    native: NativeClient, key: int, result: Promise, id_: Promise, backend: Backend | None, shown: str
) -> None:
    """A Turn was collected: the core keeps nothing of it for a loop; a
    failure nobody retrieved (its result's, which its id and loops share) is
    reported, as asyncio reports a Future's exception never retrieved."""
    native.release_turn(key)
    error = result.error
    if error is None or result.retrieved or id_.retrieved or backend is None:
        return
    try:
        backend.report(f"a Turn's failure was never retrieved ({shown})", error, {"turn": shown})
    except Exception:  # the loop is gone: nobody to tell
        pass


class Turn:
    """A turn of the agent: an async iterable of its events (its
    `turn_started` through its `turn_finished`, with the `state` and
    `diagnostic` events between them, and an overflow report if one hit),
    with `await turn.id()`, `await turn.result()` and `await turn.interrupt()`.
    A loop over it ends the way its result does: if the result raises, the
    loop raises the same error after the turn's events.

    `async with client.turn(...) as turn:` scopes it: leaving the block
    while the turn still runs (an exception, a cancellation, a deadline,
    `break`ing out of a loop in it) interrupts the turn at once, whatever
    still holds a reference to it (see `aclose()`). A failure nobody
    retrieved (through `result()`, `id()` or a loop) is reported when the
    Turn is collected: to the asyncio loop's exception handler, or as a
    `RuntimeWarning` under trio."""

    __slots__ = (
        "_link",
        "_owner",
        "_key",
        "_handler",
        "_id",
        "_result",
        "_thrown",
        "_tasks",
        "_cursor",
        "_traced",
        "waiting",
        "__weakref__",
    )

    def __init__(
        self, link: Link, owner: object, text: Any, mode: Any, on_approval: Any, timeout: Any, what: str
    ) -> None:
        self._link = link
        #: The client: held, so that it (and its koma) lives while the Turn does.
        self._owner = owner
        backend = link.bind()
        native = link.native
        self._key = key = native.token()
        self._handler = on_approval if callable(on_approval) else None
        self._id = Promise()
        self._result = Promise()
        #: What the handler raised, by approval (the error's cause if it fails the turn).
        self._thrown: dict[str, BaseException] = {}
        #: Handlers still computing an answer, by approval.
        self._tasks: dict[str, Cancel] = {}
        self._cursor = Cursor(lambda: native.take_turn_events(key), native.counters)
        self.waiting: list[Future] = []
        refused: KomaError | None = None
        params: bytes | None = None
        seconds: float | None = None
        try:
            params = encode_params(what, {"text": text})
            seconds = seconds_of(f"{what}: `timeout`", timeout)
        except KomaError as e:
            refused = e
        mode_text = mode if mode is None or isinstance(mode, str) else repr(mode)
        tel = link.telemetry  # a traced client: the turn's spans, in the caller's context
        if tel is not None:
            tel.starting(native)
        self._traced = None if tel is None else tel.turn()
        link.turns[key] = self._update
        ended = native.open_turn(key, what, params, mode_text, _approvals(on_approval), seconds, refused)
        if ended is not None:  # refused at once: the client is closed or failed (or was made before fork())
            del link.turns[key]
            self._update(ended)
        if what == "turn":
            weakref.finalize(self, _collected, native, key, self._result, self._id, backend, f"turn {text!r}")

    # ---- what the core says of it (the client's wake hands it over)

    def _update(self, update: TurnUpdate) -> None:
        if type(update) is TurnId:
            self._id.resolve(update.id)
        elif type(update) is TurnApproval:
            self._ask(update.approval, _value(update.request, update.lifts))
        elif type(update) is TurnEnded:
            if self._traced is not None:
                self._traced.end(update.record)  # telemetry: the core's record
            self._ended(_value(update.result, update.lifts), update.failure)
        else:  # TurnReady
            serve(self.waiting, self._cursor.next)

    def _ask(self, approval: str, request: Any) -> None:
        """Ask the handler about `approval` and hand its answer to the core."""
        native, key = self._link.native, self._key

        def answered(answer: Any) -> None:
            native.answer_approval(key, approval, answer, repr(answer))  # the core judges it

        def failed(e: BaseException) -> None:
            self._thrown[approval] = e
            native.approval_failed(key, approval, f"{type(e).__name__}: {e}")

        try:
            handler, traced = self._handler, self._traced
            if handler is None:
                answer = None
            else:  # traced: in the turn span's context (its own spans are the turn's)
                answer = handler(request) if traced is None else traced.run(handler, request)
        except Exception as e:
            failed(e)
            return
        if not inspect.isawaitable(answer):
            answered(answer)
            return

        async def wait(pending: Awaitable[Any] = answer) -> None:
            try:
                result = await pending
            except Exception as e:
                failed(e)
                return
            finally:
                self._tasks.pop(approval, None)
            answered(result)

        self._tasks[approval] = self._link.bind().spawn(wait)

    def _ended(self, result: Any, failure: TurnFailure | None) -> None:
        """The turn is over: a handler still running is cancelled (its answer
        could no longer be used), and the result settles."""
        tasks, self._tasks = self._tasks, {}
        for task in tasks.values():
            task.cancel()
        value = TurnResult._wire(result)
        if failure is None:
            self._result.resolve(value)
        else:
            error = failure.error
            approval = failure.approval
            if failure.cause == "handler" and approval is not None and approval in self._thrown:
                error.__cause__ = self._thrown[approval]
            error.result = value
            if failure.fails_id:
                self._id.reject(error)
            self._result.reject(error)
        self._thrown.clear()
        serve(self.waiting, self._cursor.next)

    def _stop(self) -> None:
        """The task that awaited it was cancelled: the core interrupts the agent."""
        self._link.native.stop_turn(self._key)

    # ---- what a user calls

    async def id(self) -> str:
        """The turn's id, once the submit has answered."""
        value: str = await self._id.wait()
        return value

    async def result(self) -> TurnResult:
        """The turn's result, once it has finished. Raises the client's error
        if it failed, `aborted` or `timeout` if the turn was stopped, or the
        `on_approval` handler's failure (`invalid_params`); each carries the
        result so far as `error.result`."""
        value: TurnResult = await self._result.wait()
        return value

    async def interrupt(self) -> None:
        """Interrupt this turn if it still runs (nothing is written otherwise)."""
        link = self._link
        backend = link.bind()
        token = link.native.token()
        if link.native.interrupt_turn(self._key, token):
            return
        await link.wait_for(token, backend)

    async def aclose(self) -> None:
        """Leave the turn: if it still runs, it is interrupted now (the
        result then settles with koma's status, normally "interrupted"),
        and what no loop took stops counting against the bound. Loops over
        it get what was left, then end as the result does. Returns at once;
        `async with` calls it on the way out."""
        self._link.native.read_turn(self._key, False)

    async def __aenter__(self) -> Turn:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self._result.settled:
            await self.aclose()

    def __aiter__(self) -> TurnLoop:
        self._link.native.read_turn(self._key, True)
        return TurnLoop(self)

    def __repr__(self) -> str:
        if not self._id.settled or self._id.error is not None:
            shown = "(no id)" if self._id.settled else "(no id yet)"
        else:
            shown = str(self._id.value)
        if not self._result.settled:
            state = "running" if self._id.settled and self._id.error is None else "starting"
        else:
            state = "failed" if self._result.error is not None else "finished"
        return f"<koma_sdk.Turn {shown} {state}>"


class TurnLoop:
    """One loop over a Turn (what `aiter(turn)` gives). Leaving it early
    (`break`, an exception in the loop's body, `aclose()`, or a cancellation
    while it waits for the next event) interrupts the turn if it still runs;
    what the loop did not take stays for a later loop."""

    __slots__ = ("_turn", "_left")

    def __init__(self, turn: Turn) -> None:
        self._turn = turn
        self._left = False

    def __aiter__(self) -> TurnLoop:
        return self

    async def __anext__(self) -> EventItem:
        t = self._turn
        item = None if t.waiting else t._cursor.next()
        if item is None:
            backend = t._link.bind()
            try:
                item = await next_item(t.waiting, t._cursor.next, backend)
            except BaseException:
                # Cancelled while it waited (a deadline, a cancel scope, the
                # task cancelled): the loop is left now, as an async
                # generator is, not when a collector drops it.
                self._leave()
                raise
        if isinstance(item, _End):
            self._left = True  # the end: nothing to leave
            await t.result()  # the loop ends the way the result does
            raise StopAsyncIteration
        return item

    async def aclose(self) -> None:
        """Leave the loop (interrupting the turn if it still runs)."""
        self._leave()

    def _leave(self) -> None:
        if self._left:
            return
        self._left = True
        t = self._turn
        t._cursor.release()
        t._link.native.read_turn(t._key, False)

    def __del__(self) -> None:
        # `break` drops the loop at once: leave the turn then, not when a collector gets to it.
        try:
            self._leave()
        except Exception:
            pass


async def run(link: Link, owner: object, text: Any, mode: Any, on_approval: Any, timeout: Any) -> TurnResult:
    """`run()`: a turn nobody reads; its result. Cancelling it stops the
    agent. A failure carries the result so far as `error.result`."""
    # A task cancelled already writes nothing (as an aborted signal in
    # JavaScript): the cancellation is taken before the turn is opened.
    await link.bind().checkpoint()
    turn = Turn(link, owner, text, mode, on_approval, timeout, "run")
    try:
        return await turn.result()
    except KomaError:
        raise
    except BaseException:
        turn._stop()
        raise


__all__ = ["ApprovalPolicy", "END", "Turn", "TurnLoop", "run"]
