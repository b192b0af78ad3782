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
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Protocol, TypeVar

from ._errors import KomaError

T = TypeVar("T")


class Future(Protocol):
    """What a call waits on: settled once from a callback on the loop."""

    def done(self) -> bool: ...

    def set_result(self, value: Any) -> None: ...

    def set_exception(self, error: BaseException) -> None: ...

    def __await__(self) -> Generator[Any, None, Any]: ...


class Cancel(Protocol):
    def cancel(self) -> object: ...


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

    def is_running(self) -> bool:
        """Whether this loop still runs (from any thread)."""
        ...

    async def checkpoint(self) -> None:
        """Raise the loop's cancellation if the task is cancelled already."""

    async def shielded(self, work: Awaitable[T]) -> T:
        """Await `work` to its end even if the caller is cancelled meanwhile
        (cleanup that must finish, as `close()`); the cancellation is then
        delivered as usual."""
        ...

    def spawn(self, work: Callable[[], Awaitable[None]]) -> Cancel:
        """Run `work` as a task of its own; it must catch its own errors.
        Cancelling it stops the task (its awaits raise the loop's
        cancellation)."""

    def report(self, message: str, error: BaseException, context: dict[str, Any]) -> None:
        """Report an error nobody retrieved, as the loop reports its own
        (from any thread; a finalizer calls it)."""


class _SocketPump:
    """Windows: the wake socket (python/src/wake_windows.rs) read with the
    loop's own `sock_recv`, `callback` after each read. The proactor loop
    (asyncio's default there) has no `add_reader`: it receives with an
    overlapped read; the selector loop waits for readiness. The socket is
    the client's: this wraps it, and lets go of it without closing it."""

    __slots__ = ("_loop", "_fd", "_sock", "_task")

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, callback: Callable[[], None]) -> None:
        import socket

        self._loop = loop
        self._fd = fd
        self._sock = socket.socket(fileno=fd)
        self._sock.setblocking(False)
        sock = self._sock

        async def pump() -> None:
            while True:
                try:
                    data = await loop.sock_recv(sock, 256)
                except OSError:  # the socket was closed: the watch is over
                    return
                if not data:
                    return
                callback()

        self._task: asyncio.Task[None] = loop.create_task(pump())

    def stop(self) -> None:
        """On the loop's thread, or once the loop is closed."""
        try:
            self._task.cancel()
            # The selector loop forgets the socket now (the cancelled read
            # would only in its next turn), before the client closes it.
            self._loop.remove_reader(self._fd)
        except (NotImplementedError, RuntimeError):  # the proactor loop; a closed loop
            pass
        finally:
            self._sock.detach()


class _Asyncio:
    __slots__ = ("key", "_loop", "_tasks", "_pumps")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.key: object = loop
        self._loop = loop
        # asyncio keeps only weak references to tasks.
        self._tasks: set[asyncio.Task[None]] = set()
        # Windows: the wake sockets watched, by their number.
        self._pumps: dict[int, _SocketPump] = {}

    def future(self) -> Future:
        return self._loop.create_future()

    def is_current(self) -> bool:
        return _running_loop() is self._loop

    def watch(self, fd: int, callback: Callable[[], None]) -> None:
        if sys.platform == "win32":
            self._pumps[fd] = _SocketPump(self._loop, fd, callback)
        else:
            self._loop.add_reader(fd, callback)

    def unwatch(self, fd: int, then: Callable[[], None]) -> None:
        loop = self._loop

        def remove() -> None:
            try:
                if not self._stop_pump(fd):
                    loop.remove_reader(fd)
            finally:
                then()

        if loop.is_closed():
            self._stop_pump(fd)
            then()
        elif loop.is_running() and not self.is_current():
            try:
                loop.call_soon_threadsafe(remove)
            except RuntimeError:  # closed meanwhile
                self._stop_pump(fd)
                then()
        else:
            remove()

    def _stop_pump(self, fd: int) -> bool:
        """Windows: stop the pump of `fd`; whether there was one."""
        pump = self._pumps.pop(fd, None)
        if pump is None:
            return False
        pump.stop()
        return True

    def call_soon(self, callback: Callable[[], None]) -> None:
        self._loop.call_soon(callback)

    def call_later(self, delay: float, callback: Callable[[], None]) -> Cancel:
        return self._loop.call_later(delay, callback)

    def is_running(self) -> bool:
        return self._loop.is_running() and not self._loop.is_closed()

    async def checkpoint(self) -> None:
        await asyncio.sleep(0)

    async def shielded(self, work: Awaitable[T]) -> T:
        # asyncio delivers a cancellation once: the close goes on in a task
        # of its own while the caller gets CancelledError.
        return await asyncio.shield(work)

    def spawn(self, work: Callable[[], Awaitable[None]]) -> Cancel:
        async def run() -> None:
            await work()

        task = self._loop.create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def report(self, message: str, error: BaseException, context: dict[str, Any]) -> None:
        # As asyncio reports a Future's exception that was never retrieved.
        self._loop.call_exception_handler({"message": message, "exception": error, **context})


class _TrioFuture:
    """A future for trio: awaited by any number of tasks; a task whose wait
    is cancelled is no longer counted as a waiter (so `done()` is then true,
    as an asyncio future's is, and nothing is handed to it)."""

    __slots__ = ("_outcome", "_tasks", "_abandoned")

    def __init__(self) -> None:
        self._outcome: Any = None
        self._tasks: list[Any] = []
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


class _TrioWatch:
    """One watched descriptor: its pump's scope, and whether it was let go."""

    __slots__ = ("scope", "stopped")

    def __init__(self, scope: Any) -> None:
        self.scope = scope
        self.stopped = False


class _Trio:
    __slots__ = ("key", "_token", "_watches")

    def __init__(self, token: Any) -> None:
        self.key: object = token
        self._token = token
        self._watches: dict[int, _TrioWatch] = {}

    def future(self) -> Future:
        return _TrioFuture()

    def is_current(self) -> bool:
        return _in_trio_run(self._token)

    def watch(self, fd: int, callback: Callable[[], None]) -> None:
        import trio

        watch = _TrioWatch(trio.CancelScope())
        self._watches[fd] = watch

        async def pump() -> None:
            # A system task: anything it raised would end the whole run. The
            # callback may let go of the descriptor (the client closed), so
            # the watch is checked before each wait, and a wait that the
            # descriptor's closing ends is the watch's end too.
            with watch.scope:
                while not watch.stopped:
                    try:
                        await trio.lowlevel.wait_readable(fd)
                    except (trio.ClosedResourceError, OSError):
                        return
                    if watch.stopped:
                        return
                    callback()

        trio.lowlevel.spawn_system_task(pump)

    def unwatch(self, fd: int, then: Callable[[], None]) -> None:
        watch = self._watches.pop(fd, None)

        def stop() -> None:
            try:
                if watch is not None:
                    import trio

                    watch.stopped = True
                    watch.scope.cancel()
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

    def is_running(self) -> bool:
        import trio

        try:
            self._token.run_sync_soon(_nothing)
        except trio.RunFinishedError:
            return False
        return True

    async def checkpoint(self) -> None:
        import trio

        await trio.lowlevel.checkpoint_if_cancelled()

    async def shielded(self, work: Awaitable[T]) -> T:
        import trio

        # A cancel scope keeps raising at every await inside it: shield the
        # cleanup, as trio's own libraries do.
        with trio.CancelScope(shield=True):
            result = await work
        return result

    def spawn(self, work: Callable[[], Awaitable[None]]) -> Cancel:
        import trio

        scope = trio.CancelScope()

        async def run() -> None:
            with scope:
                await work()

        trio.lowlevel.spawn_system_task(run)
        return scope

    def report(self, message: str, error: BaseException, context: dict[str, Any]) -> None:
        # trio has no handler of its own for errors nobody retrieved: a
        # RuntimeWarning, as Python reports a coroutine never awaited.
        import warnings

        warnings.warn(f"{message}: {type(error).__name__}: {error}", RuntimeWarning, stacklevel=2)


def _nothing() -> None:
    pass


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


def serve(waiting: list[Future], take: Callable[[], Any]) -> None:
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


async def next_item(waiting: list[Future], take: Callable[[], Any], backend: Backend) -> Any:
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
    turn layer's `id` and `result`). `retrieved` says whether its error was
    raised to someone (its owner reports one that never was)."""

    __slots__ = ("_settled", "_value", "_error", "_waiters", "_callbacks", "retrieved")

    def __init__(self) -> None:
        self._settled = False
        self._value: Any = None
        self._error: BaseException | None = None
        self._waiters: list[Future] = []
        self._callbacks: list[Callable[[], None]] = []
        self.retrieved = False

    @property
    def settled(self) -> bool:
        return self._settled

    @property
    def error(self) -> BaseException | None:
        """Its error, once settled with one."""
        return self._error

    @property
    def value(self) -> Any:
        """Its value, once settled with one."""
        return self._value

    def resolve(self, value: Any) -> None:
        self._settle(value, None)

    def reject(self, error: BaseException) -> None:
        self._settle(None, error)

    def _settle(self, value: Any, error: BaseException | None) -> None:
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
            self.retrieved = True
            raise self._error
        return self._value
