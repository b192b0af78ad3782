"""A pure-asyncio client of the Koma SDK protocol, version 1: the baseline
that koma_sdk is measured against. It is not the product. It reads the way
the ACP and Copilot Python SDKs do, carefully:

- `asyncio.create_subprocess_exec`, stdout through a `StreamReader` whose
  limit is raised to the 40 MiB frame (plus its line terminator), one
  `readline()` and one `json.loads` per line;
- futures by request id, answered in any order;
- requests written in one loop iteration go out in one `write()`;
- the same checks as the core for the subset the benchmark uses: hello,
  frame classification, the sequence check, at most 64 pending, the event
  buffer of 256 frames and 64 MiB with its one overflow report, the 40 MiB
  bound both ways, a 64 KiB stderr tail; close() detaches, then stops the
  child and waits until it is reaped.

API subset: probe(), state(), request(method, params), events(), close(),
`pid`, `stderr`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

MAX_FRAME_BYTES = 41_943_040
MAX_PENDING = 64
MAX_BUFFERED_EVENTS = 256
MAX_BUFFERED_EVENT_BYTES = 67_108_864
STDERR_KEEP_BYTES = 65_536
DETACH_GRACE = 2.0
STOP_GRACE = 1.0
CATALOG = frozenset(
    ["state", "turn_started", "output", "tool_call", "tool_result", "approval_requested", "turn_finished", "diagnostic"]
)
# Part B's table: field -> (type, required).
METHODS: dict[str, dict[str, tuple[type, bool]]] = {
    "create": {"cwd": (str, False), "model": (str, False)},
    "resume": {"session": (str, True), "after": (int, False)},
    "state": {},
    "submit": {"text": (str, True)},
    "enqueue": {"text": (str, True)},
    "interrupt": {},
    "interrupt_and_submit": {"text": (str, True)},
    "approve": {"approval": (str, True), "decision": (str, True)},
    "configure": {"model": (str, False)},
    "detach": {},
}
_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


class PureError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class Event:
    __slots__ = ("seq", "name", "data")
    type = "event"

    def __init__(self, seq: int, name: str, data: Any) -> None:
        self.seq = seq
        self.name = name
        self.data = data


class Overflow:
    __slots__ = ("dropped",)
    type = "overflow"

    def __init__(self, dropped: int) -> None:
        self.dropped = dropped


class State:
    __slots__ = ("session", "status", "turn", "queued", "model")

    def __init__(self, d: dict[str, Any]) -> None:
        self.session = d.get("session")
        self.status = d.get("status")
        self.turn = d.get("turn")
        self.queued = d.get("queued")
        self.model = d.get("model")


_OVERFLOW = object()


def _check_params(method: str, params: Any) -> str:
    if params is None:
        return "{}"
    if not isinstance(params, dict):
        raise PureError("invalid_params", f"{method}: params must be an object")
    table = METHODS.get(method)
    if table is not None:
        for k, v in params.items():
            spec = table.get(k)
            if spec is None:
                raise PureError("invalid_params", f"{method}: unknown field `{k}`")
            if v is not None and (type(v) is not spec[0]):
                raise PureError("invalid_params", f"{method}: field `{k}` has the wrong type")
        for k, (_, required) in table.items():
            if required and params.get(k) is None:
                raise PureError("invalid_params", f"{method}: field `{k}` is required")
    try:
        return _ENCODE(params)
    except (TypeError, ValueError) as e:
        raise PureError("invalid_params", f"{method}: params cannot be sent as JSON ({e})") from None


class _Events:
    """The iterator of `client.events()`: one queue per client."""

    __slots__ = ("_c",)

    def __init__(self, client: PureAsyncioClient) -> None:
        self._c = client

    def __aiter__(self) -> _Events:
        return self

    async def __anext__(self) -> Any:
        return await self._c._next_event()


class PureAsyncioClient:
    def __init__(self, executable: str, *, env: dict[str, str] | None = None, cwd: str | None = None) -> None:
        self._executable = executable
        self._env = {**os.environ, **env} if env else None
        self._cwd = cwd
        self._proc: asyncio.subprocess.Process | None = None
        self._phase = "new"  # new | starting | ready | failed | ended | closing | closed
        self._failure: PureError | None = None
        self._hello: asyncio.Future[dict[str, Any]] | None = None
        self._capabilities: frozenset[str] = frozenset()
        self._lifecycle = "fresh"  # fresh | open | detached
        self._next_id = 0
        self._pending: dict[str, tuple[asyncio.Future[Any], str]] = {}
        self._frames = 0
        self._last_seq = -1
        self._queue: deque[Any] = deque()
        self._sizes: deque[int] = deque()
        self._ev_bytes = 0
        self._ev_frames = 0
        self._paused = False
        self._dropped = 0
        self._ev_end: tuple[PureError | None] | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._err_tail = bytearray()
        self._out: list[bytes] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._closing: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int | None:
        p = self._proc
        return p.pid if p is not None and p.returncode is None else None

    @property
    def stderr(self) -> str:
        return self._err_tail.decode(errors="replace")

    def events(self) -> AsyncIterator[Any]:
        return _Events(self)

    async def probe(self) -> dict[str, Any]:
        if self._phase in ("closing", "closed"):
            raise PureError("closed", "the client was closed")
        if self._failure is not None:
            raise self._failure
        if self._hello is None:
            await self._start()
        assert self._hello is not None
        return await asyncio.shield(self._hello)

    async def state(self) -> State:
        return State(await self.request("state"))

    async def request(self, method: str, params: Any = None) -> Any:
        if self._phase != "ready":
            await self.probe()
        return await self._send(method, params)

    # ---------------------------------------------------------------- child

    async def _start(self) -> None:
        self._phase = "starting"
        loop = asyncio.get_running_loop()
        self._hello = loop.create_future()
        try:
            self._proc = await asyncio.create_subprocess_exec(
                self._executable,
                "sdk",
                "serve",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._env,
                cwd=self._cwd,
                limit=MAX_FRAME_BYTES + 2,  # the frame, then `\r\n`
            )
        except OSError as e:
            self._fail(PureError("spawn_failed", f"could not start `{self._executable} sdk serve`: {e}"))
            return
        self._tasks = [loop.create_task(self._read_stdout()), loop.create_task(self._read_stderr())]

    async def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        err = self._proc.stderr
        tail = self._err_tail
        while chunk := await err.read(65536):
            tail += chunk
            if len(tail) > STDERR_KEEP_BYTES:
                del tail[: len(tail) - STDERR_KEEP_BYTES]

    def _with_stderr(self, what: str) -> str:
        lines = [line for line in self.stderr.split("\n") if line][-12:]
        return f"{what}; last lines of stderr:\n" + "\n".join(lines) if lines else f"{what}; stderr was empty"

    # ---------------------------------------------------------------- writing

    def _flush(self) -> None:
        out, self._out = self._out, []
        proc = self._proc
        if proc is not None and proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.write(b"".join(out))

    def _send(self, method: str, params: Any) -> asyncio.Future[Any]:
        if self._phase != "ready":
            if self._phase in ("closing", "closed"):
                raise PureError("closed", "the client was closed")
            if self._phase == "ended":
                raise PureError("lifecycle", "the session was detached: nothing is written after detach")
            raise PureError("transport_failure", f"the client failed earlier: {self._failure}")
        text = _check_params(method, params)
        if method not in self._capabilities:
            raise PureError("unsupported", f"`{method}` is not in this koma's capabilities")
        if self._lifecycle == "open" and method in ("create", "resume"):
            raise PureError("lifecycle", f"`{method}` is allowed only as the first request, and only once")
        if len(self._pending) >= MAX_PENDING:
            raise PureError(
                "too_many_pending", f"{MAX_PENDING} requests are already pending; `{method}` was not written"
            )
        self._next_id += 1
        rid = str(self._next_id)
        line = f'{{"id":"{rid}","method":{_ENCODE(method)},"params":{text}}}\n'.encode()
        if len(line) - 1 > MAX_FRAME_BYTES:
            raise PureError("frame_too_large", f"the `{method}` request would be over the 40 MiB frame bound")
        self._lifecycle = "detached" if method == "detach" else "open"
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[rid] = (fut, method)
        if not self._out:
            asyncio.get_running_loop().call_soon(self._flush)
        self._out.append(line)
        return fut

    # ---------------------------------------------------------------- reading

    async def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        out = self._proc.stdout
        while self._phase not in ("failed", "closed"):
            try:
                raw = await out.readline()
            except ValueError:  # over the limit: the frame is over 40 MiB
                self._protocol_error(f"a stdout frame is over {MAX_FRAME_BYTES} bytes (40 MiB)")
                return
            if raw[-1:] != b"\n":  # the end of stdout (after a partial line, if any)
                if raw and self._lifecycle != "detached":
                    self._protocol_error("stdout ended inside a line (no terminating newline)")
                    return
                await self._on_end()
                return
            end = len(raw) - (2 if raw[-2:] == b"\r\n" else 1)
            if not self._line(raw, end):
                return

    def _line(self, raw: bytes, end: int) -> bool:
        """One line: raw[:end], without its terminator."""
        if end == 0:
            return self._protocol_error("a blank line on stdout")
        if end > MAX_FRAME_BYTES:
            return self._protocol_error(f"a stdout frame is over {MAX_FRAME_BYTES} bytes (40 MiB)")
        if raw.startswith(b"\xef\xbb\xbf"):
            return self._protocol_error("a stdout line starts with a byte-order mark", raw)
        try:
            with memoryview(raw) as view:
                text = str(view[:end], "utf-8")  # no copy of the line's bytes
            f = json.loads(text)
        except UnicodeDecodeError:
            return self._protocol_error("a stdout line is not valid UTF-8", raw)
        except ValueError as e:
            return self._protocol_error(f"a stdout line is not one complete JSON object ({e})", raw)
        del text
        if type(f) is not dict:
            return self._protocol_error("a stdout line is not a JSON object", raw)
        self._frames += 1
        kind = f.get("type")
        if kind == "event":
            return self._event(f, raw, end)
        if kind is None:
            return self._response(f, raw)
        if kind == "hello" and self._frames == 1:
            return self._on_hello(f, raw)
        return self._protocol_error("a second hello frame" if kind == "hello" else "a frame of unknown type", raw)

    def _event(self, f: dict[str, Any], line: bytes, size: int) -> bool:
        if self._frames == 1:
            return self._protocol_error("the first frame is not hello", line)
        seq = f.get("seq")
        if type(seq) is not int or seq <= 0:
            return self._protocol_error("an event without a positive integer seq", line)
        name = f.get("name")
        if type(name) is not str:
            return self._protocol_error("an event whose name is not a string", line)
        if self._last_seq != -1 and seq != self._last_seq + 1:
            return self._protocol_error(f"event seq {seq} after {self._last_seq}")
        self._last_seq = seq
        if name in CATALOG:
            if "data" not in f:
                return self._protocol_error("an event without data", line)
            self._push(Event(seq, name, f["data"]), size)
        return True

    def _response(self, f: dict[str, Any], line: bytes) -> bool:
        if self._frames == 1:
            return self._protocol_error("the first frame is not hello", line)
        rid = f.get("id")
        if type(rid) is not str:
            return self._protocol_error("a frame with neither type nor a string id", line)
        has_result = "result" in f
        if has_result == ("error" in f):
            return self._protocol_error("a response must hold exactly one of result and error", line)
        error = f.get("error")
        if not has_result and not (
            type(error) is dict and type(error.get("code")) is str and type(error.get("message")) is str
        ):
            return self._protocol_error("a response error without string code and message", line)
        entry = self._pending.pop(rid, None)
        if entry is None or entry[0].done():
            return True  # not pending (or abandoned): ignored
        fut, method = entry
        if has_result:
            fut.set_result(f["result"])
        else:
            assert error is not None
            fut.set_exception(PureError("remote", f"koma answered `{method}` with {error['code']}: {error['message']}"))
        return True

    def _on_hello(self, f: dict[str, Any], line: bytes) -> bool:
        protocol = f.get("protocol")
        if type(protocol) is not int or protocol != 1:
            self._fail(
                PureError(
                    "protocol_mismatch", f"koma's hello says protocol {protocol!r}; this client speaks protocol 1 only"
                )
            )
            return False
        b = f.get("binary")
        caps = f.get("capabilities")
        if not (
            type(b) is dict
            and type(b.get("path")) is str
            and type(b.get("version")) is str
            and type(f.get("diagnostics")) is list
            and type(caps) is list
            and all(type(c) is str for c in caps)
        ):
            return self._protocol_error("a malformed hello", line)
        self._capabilities = frozenset(caps)
        hello = {
            "type": "hello",
            "protocol": 1,
            "binary": {"path": b["path"], "version": b["version"]},
            "diagnostics": f["diagnostics"],
            "capabilities": caps,
        }
        if self._phase == "starting":
            self._phase = "ready"
        assert self._hello is not None
        if not self._hello.done():
            self._hello.set_result(hello)
        return True

    # ---------------------------------------------------------------- events

    def _push(self, ev: Event, size: int) -> None:
        if self._ev_end is not None:
            return
        if self._paused:
            self._dropped += 1
            return
        if self._ev_frames + 1 > MAX_BUFFERED_EVENTS or self._ev_bytes + size > MAX_BUFFERED_EVENT_BYTES:
            self._dropped += self._ev_frames + 1
            self._queue.clear()
            self._sizes.clear()
            self._queue.append(_OVERFLOW)
            self._sizes.append(0)
            self._ev_frames = 0
            self._ev_bytes = 0
            self._paused = True
        else:
            self._ev_frames += 1
            self._ev_bytes += size
            self._queue.append(ev)
            self._sizes.append(size)
        self._wake()

    def _wake(self) -> None:
        w = self._waiter
        if w is not None:
            self._waiter = None
            if not w.done():
                w.set_result(None)

    async def _next_event(self) -> Any:
        while True:
            if self._queue:
                item = self._queue.popleft()
                size = self._sizes.popleft()
                if item is _OVERFLOW:
                    self._paused = False
                    dropped, self._dropped = self._dropped, 0
                    return Overflow(dropped)
                self._ev_frames -= 1
                self._ev_bytes -= size
                return item
            if self._ev_end is not None:
                if self._ev_end[0] is not None:
                    raise self._ev_end[0]
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter

    def _end_events(self, error: PureError | None) -> None:
        if self._ev_end is None:
            self._ev_end = (error,)
        self._wake()

    # ---------------------------------------------------------------- failure and close

    async def _on_end(self) -> None:
        if self._phase in ("failed", "closed", "closing"):
            return
        assert self._proc is not None
        if self._lifecycle == "detached":
            self._phase = "ended"
            await self._proc.wait()
            self._settle_pending("delivery_unknown", "koma's stdout ended after detach without its answer")
            self._end_events(None)
            return
        try:
            await asyncio.wait_for(self._proc.wait(), 0.5)  # the child's last words
        except asyncio.TimeoutError:
            pass
        self._fail(
            PureError("transport_failure", self._with_stderr(f"koma exited ({self._proc.returncode}) without detach"))
        )

    def _protocol_error(self, what: str, line: bytes | None = None) -> bool:
        quoted = f": {json.dumps(line[:200].decode(errors='replace').rstrip())}" if line is not None else ""
        self._fail(PureError("protocol_error", self._with_stderr(f"protocol error: {what}{quoted}")))
        return False

    def _settle_pending(self, code: str, why: str) -> None:
        for fut, method in self._pending.values():
            if not fut.done():
                fut.set_exception(PureError(code, f"`{method}` was written, but {why}"))
        self._pending.clear()

    def _fail(self, err: PureError) -> None:
        if self._phase in ("failed", "closed", "ended", "closing"):
            return
        self._phase = "failed"
        self._failure = err
        self._settle_pending("delivery_unknown", f"no answer can come: {err}")
        if self._hello is not None and not self._hello.done():
            self._hello.set_exception(err)
            self._hello.exception()  # retrieved: no warning if nobody waits
        self._end_events(err)
        if self._proc is not None:
            asyncio.get_running_loop().create_task(self._stop_child())

    async def _stop_child(self) -> None:
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                await asyncio.wait_for(asyncio.shield(proc.wait()), STOP_GRACE)
                return
            except asyncio.TimeoutError:
                pass
            try:
                proc.send_signal(sig)
            except ProcessLookupError:
                return
        await proc.wait()

    async def close(self) -> None:
        if self._closing is None:
            self._closing = asyncio.get_running_loop().create_task(self._close())
        await asyncio.shield(self._closing)

    async def _close(self) -> None:
        if self._phase == "new":
            self._phase = "closed"
            self._end_events(None)
            return
        if self._phase == "starting" and self._hello is not None:
            await asyncio.wait([self._hello])
        proc = self._proc
        if self._phase == "ready" and self._lifecycle != "detached" and "detach" in self._capabilities:
            assert proc is not None
            waits: list[asyncio.Future[Any]] = [asyncio.ensure_future(proc.wait())]
            try:
                detached = self._send("detach", None)
                detached.add_done_callback(lambda f: f.cancelled() or f.exception())  # its outcome matters not
                waits.append(detached)
            except PureError:
                pass  # 64 pending: stop the child instead
            self._phase = "closing"
            await asyncio.wait(waits, timeout=DETACH_GRACE)
        self._phase = "closing"
        await self._stop_child()
        if proc is not None:
            await proc.wait()
            await asyncio.gather(*self._tasks, return_exceptions=True)  # the pipes are read to their end
            if proc.stdin is not None:
                proc.stdin.close()
        self._settle_pending("delivery_unknown", "the client was closed before its answer")
        self._phase = "closed"
        self._end_events(None)
