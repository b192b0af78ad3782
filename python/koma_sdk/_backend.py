"""The event loop a client runs on: asyncio or trio, found at the first call.

The rest of the package is written once against the few things it needs
from a loop: watch a descriptor with a callback, make a future, run a
callback soon or later, and start a task that nobody awaits (an async
`on_approval` handler). anyio offers the primitives but not the last two
without a task group the caller would have to pass in, so each loop gets
its small adapter here instead; asyncio needs nothing installed, and trio
is used only when the caller runs under it.
"""

from __future__ import annotations

import asyncio
import sys
from asyncio.events import _get_running_loop as _running_loop  # C, None outside a loop
from typing import Any, Awaitable, Callable, Generator, List, Optional, Protocol

from ._errors import KomaError


class Future(Protocol):
    """What a call waits on: settled once from a callback on the loop."""

    def done(self) -> bool: ...

    def set_result(self, value: Any) -> None: ...

    def set_exception(self, error: BaseException) -> None: ...

    def __await__(self) -> Generator[Any, None, Any]: ...


class Cancel(Protocol):
    def cancel(self) -> None: ...


class Backend(Protocol):
    #: The loop itself (asyncio) or its token (trio): what a client is bound to.
    key: object

    def future(self) -> Future: ...

    def is_current(self) -> bool:
        """Whether this is the running loop's backend (cheap: called per call)."""

    def watch(self, fd: int, callback: Callable[[], None]) -> None: ...

    def unwatch(self, fd: int, then: Callable[[], None]) -> None:
        """Stop watching `fd`, then call `then` (from any thread; on the loop
        when it still runs, so that `fd` is closed only after)."""

    def call_soon(self, callback: Callable[[], None]) -> None: ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> Cancel: ...

    def spawn(self, work: Callable[[], Awaitable[None]]) -> Cancel:
        """Run `work` as a task of its own; it must catch its own errors.
        Cancelling it stops the task (its awaits raise the loop's
        cancellation)."""


class _Asyncio:
    __slots__ = ("key", "_loop", "_tasks")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.key: object = loop
        self._loop = loop
        # asyncio keeps only weak references to tasks.
        self._tasks: set[asyncio.Task[None]] = set()

    def future(self) -> Future:
        return self._loop.create_future()

    def is_current(self) -> bool:
        return _running_loop() is self._loop

    def watch(self, fd: int, callback: Callable[[], None]) -> None:
        self._loop.add_reader(fd, callback)

    def unwatch(self, fd: int, then: Callable[[], None]) -> None:
        loop = self._loop

        def remove() -> None:
            try:
                loop.remove_reader(fd)
            finally:
                then()

        if loop.is_closed():
            then()
        elif loop.is_running() and not self.is_current():
            try:
                loop.call_soon_threadsafe(remove)
            except RuntimeError:  # closed meanwhile
                then()
        else:
            remove()

    def call_soon(self, callback: Callable[[], None]) -> None:
        self._loop.call_soon(callback)

    def call_later(self, delay: float, callback: Callable[[], None]) -> Cancel:
        return self._loop.call_later(delay, callback)

    def spawn(self, work: Callable[[], Awaitable[None]]) -> Cancel:
        async def run() -> None:
            await work()

        task = self._loop.create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


class _TrioFuture:
    """A future for trio: awaited by any number of tasks; a task whose wait
    is cancelled is no longer counted as a waiter (so `done()` is then true,
    as an asyncio future's is, and nothing is handed to it)."""

    __slots__ = ("_outcome", "_tasks", "_abandoned")

    def __init__(self) -> None:
        self._outcome: Any = None
        self._tasks: List[Any] = []
        self._abandoned = False

    def done(self) -> bool:
        return self._outcome is not None or self._abandoned

    def set_result(self, value: Any) -> None:
        import outcome

        self._settle(outcome.Value(value))

    def set_exception(self, error: BaseException) -> None:
        import outcome

        self._settle(outcome.Error(error))

    def _settle(self, result: Any) -> None:
        if self.done():
            return
        import trio

        self._outcome = result
        for task in self._tasks:
            trio.lowlevel.reschedule(task, result)
        self._tasks.clear()

    def __await__(self) -> Generator[Any, None, Any]:
        return self._wait().__await__()

    async def _wait(self) -> Any:
        import trio

        if self._outcome is not None:
            await trio.lowlevel.checkpoint()
            return self._outcome.unwrap()
        task = trio.lowlevel.current_task()
        self._tasks.append(task)

        def abort(_: Any) -> Any:
            self._tasks.remove(task)
            if not self._tasks:
                self._abandoned = True
            return trio.lowlevel.Abort.SUCCEEDED

        return await trio.lowlevel.wait_task_rescheduled(abort)


class _Trio:
    __slots__ = ("key", "_token", "_watches")

    def __init__(self, token: Any) -> None:
        self.key: object = token
        self._token = token
        self._watches: dict[int, Any] = {}

    def future(self) -> Future:
        return _TrioFuture()

    def is_current(self) -> bool:
        return _in_trio_run(self._token)

    def watch(self, fd: int, callback: Callable[[], None]) -> None:
        import trio

        scope = trio.CancelScope()
        self._watches[fd] = scope

        async def pump() -> None:
            with scope:
                while True:
                    await trio.lowlevel.wait_readable(fd)
                    callback()

        trio.lowlevel.spawn_system_task(pump)

    def unwatch(self, fd: int, then: Callable[[], None]) -> None:
        scope = self._watches.pop(fd, None)

        def stop() -> None:
            try:
                if scope is not None:
                    import trio

                    scope.cancel()
                    # Forget the descriptor in trio's epoll before it is closed.
                    trio.lowlevel.notify_closing(fd)
            finally:
                then()

        if _in_trio_run(self._token):
            stop()
        else:
            try:
                self._token.run_sync_soon(stop)
            except Exception:  # the run is over
                then()

    def call_soon(self, callback: Callable[[], None]) -> None:
        self._token.run_sync_soon(callback)

    def call_later(self, delay: float, callback: Callable[[], None]) -> Cancel:
        import trio

        scope = trio.CancelScope()

        async def wait() -> None:
            with scope:
                await trio.sleep(delay)
                callback()

        trio.lowlevel.spawn_system_task(wait)
        return scope

    def spawn(self, work: Callable[[], Awaitable[None]]) -> Cancel:
        import trio

        scope = trio.CancelScope()

        async def run() -> None:
            with scope:
                await work()

        trio.lowlevel.spawn_system_task(run)
        return scope


def _in_trio_run(token: Any) -> bool:
    trio = sys.modules.get("trio")
    if trio is None:
        return False
    try:
        return bool(trio.lowlevel.current_trio_token() is token)
    except RuntimeError:
        return False


def current() -> Backend:
    """The backend of the running loop; `KomaError` (`invalid_params`) when
    there is none."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None:
        return _Asyncio(loop)
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            return _Trio(trio.lowlevel.current_trio_token())
        except RuntimeError:
            pass
    raise KomaError("invalid_params", "koma_sdk needs a running asyncio or trio event loop here")


class Sink:
    """Where a call's answer goes when no task awaits it (the turn layer)."""

    __slots__ = ("_on_value", "_on_error", "_done")

    def __init__(self, on_value: Callable[[Any], None], on_error: Callable[[KomaError], None]) -> None:
        self._on_value = on_value
        self._on_error = on_error
        self._done = False

    def done(self) -> bool:
        return self._done

    def set_result(self, value: Any) -> None:
        self._done = True
        self._on_value(value)

    def set_exception(self, error: BaseException) -> None:
        self._done = True
        assert isinstance(error, KomaError)
        self._on_error(error)



def serve(waiting: List[Future], take: Callable[[], Any]) -> None:
    """Hand what `take` gives to the futures that wait, in order, skipping
    those whose waiter was cancelled. `take` returns None when it has nothing
    now; what it raises goes to every waiter."""
    while waiting:
        if waiting[0].done():
            waiting.pop(0)
            continue
        try:
            item = take()
        except BaseException as error:
            for w in waiting:
                if not w.done():
                    w.set_exception(error)
            waiting.clear()
            return
        if item is None:
            return
        waiting.pop(0).set_result(item)


async def next_item(waiting: List[Future], take: Callable[[], Any], backend: Backend) -> Any:
    """The next item: at once if nobody waits before us and `take` has one,
    else when `serve` hands it over (a cancelled wait leaves the line)."""
    if not waiting:
        item = take()
        if item is not None:
            return item
    fut = backend.future()
    waiting.append(fut)
    try:
        return await fut
    except BaseException:
        if fut in waiting:
            waiting.remove(fut)
        raise


class Promise:
    """A value or an error settled once, awaited by any number of tasks (the
    turn layer's `id` and `result`). Nothing is logged when nobody awaits it."""

    __slots__ = ("_settled", "_value", "_error", "_waiters", "_callbacks")

    def __init__(self) -> None:
        self._settled = False
        self._value: Any = None
        self._error: Optional[BaseException] = None
        self._waiters: List[Future] = []
        self._callbacks: List[Callable[[], None]] = []

    @property
    def settled(self) -> bool:
        return self._settled

    def resolve(self, value: Any) -> None:
        self._settle(value, None)

    def reject(self, error: BaseException) -> None:
        self._settle(None, error)

    def _settle(self, value: Any, error: Optional[BaseException]) -> None:
        if self._settled:
            return
        self._settled = True
        self._value = value
        self._error = error
        for w in self._waiters:
            if not w.done():
                w.set_result(None)
        self._waiters.clear()
        callbacks, self._callbacks = self._callbacks, []
        for c in callbacks:
            c()

    def on_settled(self, callback: Callable[[], None]) -> None:
        """Call `callback` once settled (now, if it is)."""
        if self._settled:
            callback()
        else:
            self._callbacks.append(callback)

    async def wait(self) -> Any:
        if not self._settled:
            fut = current().future()
            self._waiters.append(fut)
            try:
                await fut
            finally:
                if fut in self._waiters:
                    self._waiters.remove(fut)
        if self._error is not None:
            raise self._error
        return self._value
