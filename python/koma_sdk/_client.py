"""`Client`: coroutines named after the protocol's methods, over the native
connection. Requests are written from the calling task; their answers come
back when the client's wake descriptor turns readable, and one native call
(`deliver`) then hands over everything of the wake, with the results parsed
by one `json.loads`."""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Callable, Mapping
from functools import partial
from types import TracebackType
from typing import Any, TypeVar, Union

from . import _backend, _telemetry
from ._args import params as _params
from ._args import seconds as _seconds
from ._errors import KomaError, invalid
from ._lift import put_back
from ._link import Link
from ._logging import frames_now_wanted, frames_wanted, log_trace
from ._native import NativeClient
from ._options import HELLO_TIMEOUT
from ._stream import ClientStream, EventStream
from ._surface import Methods
from ._turn import ApprovalPolicy, Turn, run
from ._types import Hello, TurnMode, TurnResult
from ._values import NotAnObject, Wire

T = TypeVar("T")
PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

_loads = json.loads


def _path(what: str, value: Any) -> bytes:
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise invalid(f"Client: `{what}` must be a str or a path, not {type(value).__name__}")
    try:
        return os.fsencode(value)
    except (TypeError, UnicodeEncodeError) as e:
        raise invalid(f"Client: `{what}` cannot be used as a path ({e})") from None


def _env(env: Any) -> list[tuple[bytes, bytes]]:
    if env is None:
        return []
    if not isinstance(env, Mapping):
        raise invalid(f"Client: `env` must be a mapping of str to str, not {type(env).__name__}")
    out = []
    for k, v in env.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise invalid(f"Client: `env` must map str to str; {k!r}: {v!r} does not")
        try:
            out.append((os.fsencode(k), os.fsencode(v)))
        except UnicodeEncodeError as e:
            raise invalid(f"Client: `env[{k!r}]` cannot be passed to a process ({e})") from None
    return out


class _Wake:
    """The client's wake descriptor and the loop that watches it. Held by
    the client and by its finalizer (never the other way round), so the
    loop's callback does not keep the client alive."""

    __slots__ = ("native", "callback", "backend", "fd", "__weakref__")

    def __init__(self, native: NativeClient, callback: Callable[[], None]) -> None:
        self.native = native
        self.callback = callback
        self.backend: _backend.Backend | None = None
        self.fd: int | None = None

    def current(self) -> _backend.Backend:
        """The running loop's backend; the descriptor is watched by it (a
        client belongs to the loop that used it last)."""
        backend = self.backend
        if backend is not None and backend.is_current():
            return backend
        backend = _backend.current()
        self.unwatch(release=False)
        fd = self.native.wake_fd()
        if fd is not None:
            backend.watch(fd, self.callback)
            self.backend = backend
            self.fd = fd
        return backend

    def unwatch(self, release: bool) -> None:
        backend, fd = self.backend, self.fd
        self.backend = self.fd = None
        then: Callable[[], None] = _nothing
        if release:
            then = self.native.release_wake
        elif fd is not None:
            # Another loop watches next: what only this one used can go (Windows' socket of this loop).
            then = partial(self.native.retire_wake, fd)
        if backend is not None and fd is not None:
            backend.unwatch(fd, then)
        else:
            then()


def _nothing() -> None:
    pass


_live: weakref.WeakSet[_Wake] = weakref.WeakSet()


#: How long a collected client's finalizer waits for its child to be reaped
#: and the core's threads to end (SIGKILL makes it milliseconds; the bound
#: is for a process that outlives it).
_COLLECTED_WAIT = 3.0


def _collected(wake: _Wake) -> None:
    """A client was collected (or the interpreter exits) without close():
    stop its child's whole group now, and return once it is reaped and
    nothing of the client is left (the core's threads too, if it was the
    last client), as `close()` does."""
    try:
        wake.native.kill_and_wait(_COLLECTED_WAIT)
    finally:
        wake.unwatch(release=True)


def _after_fork_in_child() -> None:
    # The parent's clients stay the parent's: their descriptors are closed
    # here (the parent keeps its own), and their calls are refused.
    for wake in list(_live):
        wake.backend = wake.fd = None
        wake.native.release_wake()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _bind_weakly(ref: weakref.ReferenceType[Client]) -> _backend.Backend:
    client = ref()
    if client is None:  # an events() iterator keeps its client: only a stray stream gets here
        return _backend.current()
    return client._bind()


def _on_wake(ref: weakref.ReferenceType[Client]) -> None:
    client = ref()
    if client is None:
        return
    try:
        client._deliver()
    except Exception as e:
        # A bug of this package: fail the client's calls rather than leave
        # them waiting (and never let it escape into the loop's own callback).
        client._fail_all(KomaError("transport_failure", f"an internal error in koma_sdk while delivering: {e!r}"))


class Client(Methods):
    """A client of one `koma sdk serve` child. Nothing starts until the first
    call; every call starts the child and awaits its hello first if that has
    not happened. `async with Client(...) as c:` closes it.

    `env` is added to this process's environment for the child.
    `hello_timeout` (seconds, `None`: no bound) bounds the wait for hello.
    `trace` logs every frame to the `koma_sdk.trace` logger at DEBUG (as
    does `KOMA_SDK_TRACE=1`, or that logger enabled for DEBUG, from the
    client's next call on); koma's stderr lines go to `koma_sdk.stderr` and the
    notes of the client's life to `koma_sdk` (see the README, "Logging").
    With `opentelemetry-api` installed (`koma_sdk[otel]`) and a provider set,
    the client makes spans and metrics (see the README, "Tracing with
    OpenTelemetry"): `tracer_provider` and `meter_provider` replace the
    global ones, `telemetry=False` turns them off for this client, and
    `capture_content=True` records the prompt, output and tool input and
    output. Bad arguments raise `KomaError` with code `invalid_params`."""

    def __init__(
        self,
        executable: PathLike,
        *,
        cwd: PathLike | None = None,
        env: Mapping[str, str] | None = None,
        trace: bool = False,
        hello_timeout: float | None = HELLO_TIMEOUT,
        telemetry: bool = True,
        tracer_provider: _telemetry.TracerProviderLike | None = None,
        meter_provider: _telemetry.MeterProviderLike | None = None,
        capture_content: bool = False,
    ) -> None:
        exe = _path("executable", executable)
        cwd_bytes = None if cwd is None else _path("cwd", cwd)
        env_list = _env(env)
        for name, flag in (("trace", trace), ("telemetry", telemetry), ("capture_content", capture_content)):
            if not isinstance(flag, bool):
                raise invalid(f"Client: `{name}` must be a bool")
        for name, provider, getter in (
            ("tracer_provider", tracer_provider, "get_tracer"),
            ("meter_provider", meter_provider, "get_meter"),
        ):
            if provider is not None and not callable(getattr(provider, getter, None)):
                kind = "TracerProvider" if getter == "get_tracer" else "MeterProvider"
                raise invalid(f"Client: `{name}` must be an OpenTelemetry {kind} (with {getter}())")
        hello = _seconds("`hello_timeout`", hello_timeout)
        #: OpenTelemetry's spans and metrics of this client, when it is traced (`_telemetry`).
        self._telemetry = _telemetry.make(tracer_provider, meter_provider) if telemetry else None
        traced = None if self._telemetry is None else capture_content
        #: Its frames are kept (for `koma_sdk.trace`): decided when it is made, and again at each call and wake.
        self._frames = frames_wanted(trace)
        self._native = NativeClient(exe, cwd_bytes, env_list, self._frames, hello, traced)
        self._wake = _Wake(self._native, partial(_on_wake, weakref.ref(self)))
        _live.add(self._wake)
        self._finalizer = weakref.finalize(self, _collected, self._wake)
        # The stream and the link bind through a weak reference: nothing the
        # client holds refers back to it, so a client let go of is collected
        # at once, not at some later run of the cycle collector.
        bind = partial(_bind_weakly, weakref.ref(self))
        self._queue = ClientStream(self._native, bind)
        #: What the client's calls and its Turns share (`_link.Link`).
        self._link = Link(self._native, bind, self._telemetry)

    # ---- plumbing

    def _bind(self) -> _backend.Backend:
        """The running loop's backend, which the client is bound to from now
        on. A client serves one loop at a time: from another loop while the
        first still waits on it (calls, a Turn, a loop over `events()`), it
        refuses (`lifecycle`), since moving would stall the first loop; once
        that loop is idle or gone (another `asyncio.run`, a notebook cell),
        the client moves to the new one."""
        self._keep_frames_if_wanted()
        wake = self._wake
        backend = wake.backend
        if backend is not None and backend.is_current():
            return backend
        if backend is not None and self._busy() and backend.is_running():
            raise KomaError(
                "lifecycle",
                "this client is waited on in another event loop (its calls, a Turn or a loop over events() "
                "are in flight there): a client serves one loop at a time; await it there, or make a client "
                "per loop",
            )
        return wake.current()

    def _keep_frames_if_wanted(self) -> None:
        """If `koma_sdk.trace` was enabled for DEBUG after this client was
        made, it keeps its frames from now on (at each call and wake)."""
        if not self._frames and frames_now_wanted():
            self._frames = True
            self._native.keep_frames()

    def _busy(self) -> bool:
        link = self._link
        return bool(link.calls or link.turns or self._queue._waiting)

    def _deliver(self) -> None:
        """One wake: log its trace records, settle every call it answered,
        hand the turns their updates, then serve the events."""
        try:
            d = self._native.deliver()
        except KomaError as e:
            self._fail_all(e)
            return
        self._keep_frames_if_wanted()
        trace, notes = d.trace, d.notes
        if trace:
            try:
                log_trace(trace)
            except Exception:
                pass  # a logging filter that raises must not fail the client's calls
        if notes is not None and self._telemetry is not None:
            try:
                self._telemetry.notes(notes)  # the client's span and metrics
            except Exception:
                pass  # nor may telemetry
        calls = self._link.calls
        joined = d.joined
        if joined is not None:
            tokens = d.tokens
            try:
                values = _loads(joined)
                for entry in d.lifts:
                    put_back(values, entry)
            except Exception as e:  # the core checked the JSON: this is a bug
                err = KomaError(
                    "transport_failure", f"an internal error in koma_sdk: an answer could not be read ({e})"
                )
                for token in tokens:
                    sink = calls.pop(token, None)
                    if sink is not None and not sink.done():
                        sink.set_exception(err)
            else:
                for token, value in zip(tokens, values, strict=False):
                    sink = calls.pop(token, None)
                    if sink is not None and not sink.done():
                        sink.set_result(value)
        for token, error in d.others:
            sink = calls.pop(token, None)
            if sink is not None and not sink.done():
                if error is not None:
                    sink.set_exception(error)
                else:
                    sink.set_result(None)
        updates = d.updates
        if updates:
            self._link.update(updates)
        self._queue.woke()

    def _fail_all(self, error: KomaError) -> None:
        self._native.kill_now()
        link = self._link
        calls, link.calls = link.calls, {}
        for sink in calls.values():
            if not sink.done():
                sink.set_exception(error)

    async def _call(self, method: str, params: Any, timeout: Any, result: type[Wire] | None = None) -> Any:
        if self._telemetry is not None:  # a traced client: the call in its span
            value = await self._telemetry.call(method, self._native, self._send(method, params, timeout))
        else:
            value = await self._send(method, params, timeout)
        if result is None:
            return value
        try:
            return result._wire(value)
        except NotAnObject as e:  # what the result's class cannot be made of
            raise KomaError("protocol_error", str(e)) from None

    async def _send(self, method: str, params: Any, timeout: Any) -> Any:
        seconds = _seconds("`timeout`", timeout)
        body = _params(method, params)
        backend = self._bind()
        native = self._native
        token = native.token()
        native.request(token, method, body, seconds)
        return await self._link.wait_for(token, backend)

    def _release(self) -> None:
        """After close: hand over what the core settled and the loop has not
        read yet (the answer another close awaits, a call's error), then stop
        watching and close the wake descriptor that would have carried it."""
        self._deliver()
        self._wake.unwatch(release=True)

    async def probe(self, *, timeout: float | None = None) -> Hello:
        """Start the child if needed; the checked hello."""
        if self._telemetry is not None:  # a traced client: the call in its span
            return await self._telemetry.call("probe", self._native, self._probe(timeout))
        return await self._probe(timeout)

    async def _probe(self, timeout: float | None) -> Hello:
        seconds = _seconds("`timeout`", timeout)
        backend = self._bind()
        native = self._native
        token = native.token()
        ready = native.probe(token, seconds)
        if ready is not None:
            return Hello._wire(_loads(ready))
        return Hello._wire(await self._link.wait_for(token, backend))

    async def request(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> Any:
        """Any method of hello's capabilities. The protocol's methods get
        their params checked; others take any JSON object, sent as given.
        Returns the plain JSON result."""
        if not isinstance(method, str):
            raise invalid("request: `method` must be a str")
        return await self._call(method, params, timeout)

    async def close(self) -> None:
        """Detach if it can (bounded), else end stdin, SIGTERM, SIGKILL, each
        after a grace. Idempotent; afterwards nothing of the client is left
        (process, descriptor, task). Pending calls get `delivery_unknown`."""
        if self._telemetry is not None:  # a traced client: the call in its span
            return await self._telemetry.call("close", self._native, self._close())
        return await self._close()

    async def _close(self) -> None:
        native = self._native
        token = native.token()
        if native.close(token):
            self._release()
            return
        backend = self._bind()
        fut = backend.future()
        self._link.calls[token] = fut
        # Run to its end (it is bounded) even when the caller is cancelled,
        # as leaving `async with` through a cancel scope does.
        await backend.shielded(self._closed(token, fut))

    async def _closed(self, token: int, fut: _backend.Future) -> None:
        try:
            await fut
        finally:
            self._link.calls.pop(token, None)
        self._release()

    # ---- events and turns

    def events(self) -> EventStream:
        """The client's one stream of the events no Turn took, as an async
        iterator: catalog events and the one overflow report. Every call
        iterates the same stream (and keeps the client alive while it is held)."""
        return EventStream(self._queue, self)

    def turn(
        self,
        text: str,
        *,
        mode: TurnMode | None = None,
        on_approval: ApprovalPolicy | None = None,
        timeout: float | None = None,
    ) -> Turn:
        """Start a turn (`mode="interrupt"`: stop the running one first) whose
        events a loop over the Turn takes; see the README. Bad arguments fail
        the Turn (its result and loops raise `invalid_params`)."""
        return Turn(self._link, self, text, mode, on_approval, timeout, "turn")

    async def run(
        self,
        text: str,
        *,
        on_approval: ApprovalPolicy,
        mode: TurnMode | None = None,
        timeout: float | None = None,
    ) -> TurnResult:
        """A turn in one call: its result, once it finished. Cancelling it
        interrupts the agent. A failure carries the result so far as
        `error.result`."""
        return await run(self._link, self, text, mode, on_approval, timeout)

    # ---- properties

    @property
    def stderr(self) -> str:
        """The kept tail of the child's stderr (the newest 64 KiB)."""
        return self._native.stderr

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs, else `None`."""
        return self._native.pid

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<koma_sdk.Client pid={self.pid} phase={self._native.phase}>"
