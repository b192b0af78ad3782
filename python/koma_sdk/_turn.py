"""The turn layer, above the protocol: `client.turn()` and `client.run()`.
A Turn submits its text (or interrupts and submits), takes its own events
from the client's one event queue (`_queue.py` routes them to it), answers
its approvals with `on_approval` if it has one, and collects its result. It
writes nothing but what the protocol methods write: submit or
interrupt_and_submit, approve, interrupt, state.

The rules are the Node package's `src/turn.js`, written once more in Python;
the Node tests they match are named where each rule is (`turn.test.mjs`).
"""

from __future__ import annotations

import inspect
import math
from collections import deque
from typing import Any, AsyncIterator, Awaitable, Callable, Deque, List, Optional, Union

from ._backend import Backend, Future, Promise, Sink, next_item, serve
from ._errors import KomaError, invalid
from ._queue import DONE, EventQueue, _Done
from ._types import ApprovalRequestedData, Decision, EventItem, Overflow, ToolCall, TurnResult, TurnStatus

ApprovalPolicy = Union[
    Decision,
    Callable[[ApprovalRequestedData], Union[str, Awaitable[str]]],
]
#: `send(method, params, sink)`: write a request whose answer goes to `sink`.
Send = Callable[[str, Any, Sink], None]


class _Options:
    __slots__ = ("mode", "on_approval", "timeout")

    def __init__(self, kind: str, mode: Any, on_approval: Any, timeout: Any) -> None:
        if mode is None:
            mode = "submit"
        if mode not in ("submit", "interrupt"):
            raise invalid(f'{kind}: `mode` must be "submit" or "interrupt"')
        if on_approval is not None and on_approval not in ("allow", "deny") and not callable(on_approval):
            raise invalid(f'{kind}: `on_approval` must be a function, "allow" or "deny"')
        if kind == "run" and on_approval is None:
            raise invalid(
                'run: `on_approval` is required (a function, "allow" or "deny"): nobody else sees the turn\'s approvals'
            )
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout < 0
        ):
            raise invalid(f"{kind}: `timeout` must be a finite number of seconds >= 0, or None")
        self.mode = mode
        self.on_approval = on_approval
        self.timeout = timeout


class _HeldItem:
    __slots__ = ("value", "size", "epoch", "taken")

    def __init__(self, value: EventItem, size: int, epoch: int, taken: bool) -> None:
        self.value = value
        self.size = size
        self.epoch = epoch
        self.taken = taken


def _ignore(_: Any) -> None:
    pass


class TurnState:
    """One turn: what the queue routes to (`id`, `started`, `finished`,
    `accept`, `overflow`, `end`), its result being collected, and its reader."""

    def __init__(self, send: Send, queue: EventQueue, backend: Backend, text: Any, options: _Options) -> None:
        self._send = send
        self._queue = queue
        self._backend = backend
        # What the router reads.
        self.id: Optional[str] = None
        self.started = False
        self.finished = False
        # The result being collected.
        self.status: Optional[str] = None
        self.output: List[str] = []
        self.tool_calls: List[ToolCall] = []
        self.events = 0
        self.overflowed = False
        self.error: Optional[KomaError] = None  # the first error the result raises
        self.abort_code: Optional[str] = None
        self.abort_message = ""
        self.interrupting: Optional[Promise] = None
        self.last_approval_open = False
        self.failure: Optional[BaseException] = None
        # The reader's queue.
        self.held: Deque[_HeldItem] = deque()
        self.waiting: List[Future] = []
        self.reading = False
        self.reader_done = False
        self.on_approval = options.on_approval
        self.id_promise = Promise()
        self.result_promise = Promise()
        self.cleanup: List[Callable[[], None]] = []
        self._start(text, options)

    def _start(self, text: Any, options: _Options) -> None:
        method = "interrupt_and_submit" if options.mode == "interrupt" else "submit"
        try:
            self._send(method, {"text": text}, Sink(self._submitted, self._submit_failed))
        except KomaError as e:
            self._queue.open(self)
            self.id = ""
            self.fail(e, True)
            return
        self._queue.open(self)
        if options.timeout is not None:
            seconds = options.timeout
            timer = self._backend.call_later(
                seconds,
                lambda: self.abort("timeout", f"the turn did not finish within {seconds} s; the agent was interrupted"),
            )
            self.cleanup.append(timer.cancel)

    def _submitted(self, r: Any) -> None:
        turn = r.get("turn") if isinstance(r, dict) else None
        self.id = turn if isinstance(turn, str) else ""
        self.id_promise.resolve(self.id)
        self._queue.kick()
        if self.abort_code is not None:
            self.interrupt_now()

    def _submit_failed(self, e: KomaError) -> None:
        self.id = ""
        self.fail(e, True)

    # ---- what the queue calls

    def accept(self, value: EventItem, size: int, epoch: int) -> None:
        self.events += 1
        self._collect(value)
        self._hold(_HeldItem(value, size, epoch, False))
        if value.type == "event" and value.name == "turn_finished":
            self.finish()

    def overflow(self, report: Overflow) -> None:
        # turn.test.mjs "an overflow during a turn: the Turn reports it, and its result says so"
        self.overflowed = True
        self._hold(_HeldItem(report, -1, 0, True))
        if not self.finished and self.id:
            self._recover()

    def end(self, error: Optional[BaseException]) -> None:
        # turn.test.mjs "a failing client fails the turn with its error"
        if self.finished:
            return
        self.fail(error or KomaError("closed", "the client was closed before the turn finished"), False)

    # ---- collecting

    def _collect(self, e: EventItem) -> None:
        if e.type != "event":
            return
        d: Any = e.data
        name = e.name
        if name == "turn_started":
            self.started = True
        elif name == "output":
            text = d.get("text")
            if isinstance(text, str):
                self.output.append(text)
        elif name == "tool_call":
            self.tool_calls.append(ToolCall(d.get("call"), d.get("tool"), d.get("input")))
        elif name == "tool_result":
            for rec in self.tool_calls:
                if rec.call == d.get("call"):
                    rec.output = d.get("output")
                    rec.error = d.get("error")
                    rec._has_result = True
                    break
            self.last_approval_open = False
        elif name == "approval_requested":
            self.last_approval_open = True
            self._approval(d)
        elif name == "turn_finished":
            self.status = d.get("status")

    def _approval(self, request: Any) -> None:
        """Answer an approval with on_approval (failing closed), or leave it to the reader."""
        rec = next(
            (
                c
                for c in reversed(self.tool_calls)
                if c.tool == request.get("tool") and c.approval is None and not c._has_result
            ),
            None,
        )

        def decide(decision: Decision) -> None:
            if rec is not None:
                rec.approval = decision
            try:
                # The turn may have been interrupted meanwhile, or the client
                # failed (which ends the turn): nothing to do with the answer.
                self._send("approve", {"approval": request.get("approval"), "decision": decision}, Sink(_ignore, _ignore))
            except KomaError:
                pass

        def fail_closed(error: KomaError) -> None:
            if self.error is None:
                self.error = error
            decide("deny")

        def answered(answer: Any) -> None:
            if answer == "allow" or answer == "deny":
                decide(answer)
            else:
                # turn.test.mjs "a handler that answers something else denies, and the result rejects with invalid_params"
                fail_closed(invalid(f'on_approval returned {answer!r}; it must return "allow" or "deny" (the approval was denied)'))

        def raised(e: BaseException) -> None:
            # turn.test.mjs "a handler that throws denies, and the result rejects with its error after turn_finished"
            error = invalid(f"on_approval raised {type(e).__name__}: {e} (the approval was denied)")
            error.__cause__ = e
            fail_closed(error)

        policy = self.on_approval
        if policy is None:
            # The application answers with client.approve() as it reads the
            # Turn. Nobody reads it: nobody would ever answer, so deny.
            # turn.test.mjs "a Turn nobody reads, without onApproval, does not wait forever"
            if not self.reading or self.reader_done:
                decide("deny")
            return
        if isinstance(policy, str):
            decide(policy)  # type: ignore[arg-type]
            return
        try:
            answer = policy(request)
        except Exception as e:
            raised(e)
            return
        if not inspect.isawaitable(answer):
            answered(answer)
            return

        # turn.test.mjs "run(): an async handler may take its time; the turn waits for it"
        async def wait(pending: Awaitable[Any] = answer) -> None:
            try:
                result = await pending
            except Exception as e:
                raised(e)
                return
            except BaseException as e:  # cancelled (the loop is shutting down): fail closed
                raised(e)
                raise
            answered(result)

        self._backend.spawn(wait)

    # ---- abort, deadline, interrupt, overflow recovery

    def abort(self, code: str, message: str) -> None:
        # turn.test.mjs "abort/timeout: the agent is really interrupted, and the result rejects ... after turn_finished"
        if self.finished or self.abort_code is not None:
            return
        self.abort_code = code
        self.abort_message = message
        if self.id is not None:
            self.interrupt_now()
        # else: interrupted as soon as the submit answers

    def interrupt_now(self) -> Optional[Promise]:
        if self.finished or self.id == "" or self.interrupting is not None:
            return self.interrupting
        done = Promise()
        self.interrupting = done

        def settled(_: Any) -> None:
            done.resolve(None)

        try:
            self._send("interrupt", None, Sink(settled, settled))
        except KomaError:
            done.resolve(None)
        return done

    def _recover(self) -> None:
        """After an overflow, learn from state() whether this turn still runs."""

        def got(st: Any) -> None:
            if self.finished or not isinstance(st, dict):
                return
            if st.get("turn") != self.id:
                # Its turn_finished was lost in the overflow: it is over, how is unknown.
                self.status = "unknown"
                self.finish()
            elif st.get("status") == "waiting" and not self.last_approval_open:
                # Its approval request was lost: nobody can answer it. Fail closed.
                self.interrupt_now()

        try:
            self._send("state", None, Sink(got, _ignore))
        except KomaError:
            pass  # the client failed: the turn ends with its error

    # ---- the end

    def partial(self) -> TurnResult:
        status: TurnStatus = self.status if self.status in ("completed", "interrupted", "failed") else "unknown"  # type: ignore[assignment]
        return TurnResult(self.id or "", status, "".join(self.output), self.tool_calls, self.events, self.overflowed)

    def finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        self._queue.close(self)
        self._run_cleanup()
        if not self.reading or self.reader_done:
            self._release_held()
        result = self.partial()

        def settle() -> None:
            if self.error is not None:
                self.error.result = result
                self.result_promise.reject(self.error)
            elif self.abort_code is not None:
                error = KomaError(self.abort_code, self.abort_message)  # type: ignore[arg-type]
                error.result = result
                self.result_promise.reject(error)
            else:
                self.result_promise.resolve(result)
            self._serve()

        if self.interrupting is not None:
            self.interrupting.on_settled(settle)
        else:
            settle()

    def fail(self, error: BaseException, before_id: bool) -> None:
        """The turn cannot go on (the submit failed, the client failed or closed)."""
        if self.finished:
            return
        self.finished = True
        self.failure = error
        self._queue.close(self)
        self._run_cleanup()
        if before_id or self.id is None:
            self.id_promise.reject(error)
        self._release_held()
        self.result_promise.reject(error)
        self._serve()

    def _run_cleanup(self) -> None:
        cleanup, self.cleanup = self.cleanup, []
        for c in cleanup:
            c()

    # ---- the reader

    def _hold(self, item: _HeldItem) -> None:
        self.held.append(item)
        self._serve()

    def _release_held(self) -> None:
        """Held events stop counting against the bound (they stay for a late reader)."""
        epoch = self._queue.current_epoch()
        for h in self.held:
            if not h.taken:
                h.taken = True
                if h.epoch == epoch:
                    self._queue.count(h.size)

    def _take_one(self) -> Union[None, _Done, EventItem]:
        held = self.held
        while held:
            h = held.popleft()
            if not h.taken:
                if h.epoch != self._queue.current_epoch():
                    continue  # revoked by an overflow
                h.taken = True
                self._queue.count(h.size)
            return h.value
        if self.finished:
            if self.failure is not None:
                raise self.failure
            return DONE
        return None

    def _serve(self) -> None:
        serve(self.waiting, self._take_one)

    async def next(self) -> Union[_Done, EventItem]:
        item: Union[_Done, EventItem] = await next_item(self.waiting, self._take_one, self._backend)
        return item

    def stop_reading(self) -> None:
        self.reader_done = True
        waiting, self.waiting = self.waiting, []
        for w in waiting:
            if not w.done():
                w.set_result(DONE)
        self._release_held()
        self.held.clear()


class Turn:
    """A turn of the agent: an async iterable of its events (its
    `turn_started` through its `turn_finished`, with the `state` and
    `diagnostic` events between them, and an overflow report if one hit),
    with `await turn.id()`, `await turn.result()` and `await turn.interrupt()`."""

    __slots__ = ("_state",)

    def __init__(
        self,
        send: Send,
        queue: EventQueue,
        backend: Backend,
        text: Any,
        mode: Any,
        on_approval: Any,
        timeout: Any,
        kind: str = "turn",
    ) -> None:
        self._state = TurnState(send, queue, backend, text, _Options(kind, mode, on_approval, timeout))

    async def id(self) -> str:
        """The turn's id, once the submit has answered."""
        value: str = await self._state.id_promise.wait()
        return value

    async def result(self) -> TurnResult:
        """The turn's result, once it has finished. Raises the client's error
        if it failed, `aborted` or `timeout` if the turn was stopped, or the
        `on_approval` handler's failure (`invalid_params`)."""
        value: TurnResult = await self._state.result_promise.wait()
        return value

    async def interrupt(self) -> None:
        """Interrupt this turn if it still runs (nothing is written otherwise)."""
        # turn.test.mjs "turn.interrupt() stops this turn if it still runs"
        st = self._state
        if st.id is None:
            try:
                await st.id_promise.wait()
            except KomaError:
                return
        done = st.interrupt_now()
        if done is not None:
            await done.wait()

    def __aiter__(self) -> AsyncIterator[EventItem]:
        self._state.reading = True
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[EventItem]:
        st = self._state
        try:
            while True:
                item = await st.next()
                if isinstance(item, _Done):
                    return
                yield item
        finally:
            st.stop_reading()


async def run(
    send: Send, queue: EventQueue, backend: Backend, text: Any, mode: Any, on_approval: Any, timeout: Any
) -> TurnResult:
    """`run()`: a Turn drained; its result. Cancelling it stops the agent.
    A failure carries the partial result as `error.result`."""
    turn = Turn(send, queue, backend, text, mode, on_approval, timeout, kind="run")
    st = turn._state
    try:
        try:
            async for _ in turn:
                pass
        except KomaError:
            pass  # result() says it
        return await turn.result()
    except KomaError as e:
        if e.result is None:
            raise _with_result(e, st.partial()) from e
        raise
    except BaseException:
        st.abort("aborted", "run() was cancelled; the agent was interrupted")
        raise


def _with_result(e: KomaError, result: TurnResult) -> KomaError:
    """A copy of `e` (which may be the client's shared error) with the partial result."""
    copy = KomaError(e.code, e.message, e.remote)
    copy.result = result
    return copy
