"""Stubs of the native module (python/src): the core's connection, as the
package drives it. `mypy.stubtest` checks them against the module."""

from collections.abc import Callable
from typing import Final, Literal, final

from ._errors import KomaError

__all__ = [
    "BATCH_STRIDE",
    "NativeClient",
    "SLOT_BATCH_COUNTING",
    "SLOT_BATCH_EPOCH",
    "SLOT_EPOCH",
    "SLOT_TAKEN",
    "SLOT_TAKEN_BYTES",
    "census",
    "init",
    "telemetry_table",
]

SLOT_EPOCH: Final[int]
SLOT_TAKEN: Final[int]
SLOT_BATCH_EPOCH: Final[int]
SLOT_TAKEN_BYTES: Final[int]
SLOT_BATCH_COUNTING: Final[int]
BATCH_STRIDE: Final[int]

#: Where a lifted string goes back: `(index, *path, text)`.
_LiftEntry = tuple[int | str, ...]
#: What a stream gives: a batch `(0, json, lifts, epoch, counting)`, the
#: overflow report `(1, dropped)`, or the end `(2, error or None)`.
_Taken = (
    tuple[Literal[0], bytes, list[_LiftEntry], int, int] | tuple[Literal[1], int] | tuple[Literal[2], KomaError | None]
)
#: A turn's news: `(key, kind, ...)` (see `NativeClient.deliver`).
_TurnNews = (
    tuple[int, Literal["id"], str, None, None, None]
    | tuple[int, Literal["approval"], str, bytes, list[_LiftEntry], None]
    | tuple[int, Literal["ready"], None, None, None, None]
    | tuple[int, Literal["ended"], bytes, list[_LiftEntry], KomaError | None, str | None, str | None, str | None]
)
#: A trace record: `(pid, kind, direction, text)`.
_TraceRecord = tuple[int | None, str, str | None, str]
#: One wake: `(tokens, joined results, their lifts, (token, error or None,
#: failed) of the rest, turn news, trace records, a traced client's notes as JSON)`.
_Delivered = tuple[
    list[int],
    bytes | None,
    list[_LiftEntry],
    list[tuple[int, KomaError | None, bool]],
    list[_TurnNews],
    list[_TraceRecord],
    str | None,
]

def init(error_factory: Callable[..., KomaError]) -> None: ...
def census() -> tuple[int, int]: ...
def telemetry_table() -> str: ...

@final
class NativeClient:
    def __new__(
        cls,
        executable: bytes,
        cwd: bytes | None,
        env: list[tuple[bytes, bytes]],
        trace: bool,
        hello_timeout: float | None,
        telemetry: bool | None = None,
    ) -> NativeClient: ...
    def token(self) -> int: ...
    def request(self, token: int, method: str, params: bytes | None, timeout: float | None) -> None: ...
    def probe(self, token: int, timeout: float | None) -> bytes | None: ...
    def abandon(self, token: int) -> None: ...
    def close(self, token: int) -> bool: ...
    def deliver(self) -> _Delivered: ...
    def trace_context(self, trace_id: str, span_id: str, flags: int, trace_state: str) -> bool: ...
    def take_events(self, wait: bool) -> _Taken | None: ...
    def open_turn(
        self,
        key: int,
        entry: str,
        params: bytes | None,
        mode: str | None,
        approvals: tuple[str, str],
        timeout: float | None,
        refused: KomaError | None,
    ) -> None: ...
    def take_turn_events(self, key: int) -> _Taken | None: ...
    def read_turn(self, key: int, reading: bool) -> None: ...
    def stop_turn(self, key: int) -> None: ...
    def interrupt_turn(self, key: int, token: int) -> bool: ...
    def answer_approval(self, key: int, approval: str, kind: str, value: str) -> None: ...
    def release_turn(self, key: int) -> None: ...
    def unwant_events(self) -> None: ...
    def counters(self) -> memoryview: ...
    @property
    def stderr(self) -> str: ...
    @property
    def pid(self) -> int | None: ...
    @property
    def phase(self) -> str: ...
    def buffered(self) -> tuple[int, int]: ...
    def is_closed(self) -> bool: ...
    def kill_now(self) -> None: ...
    def kill_and_wait(self, limit: float) -> bool: ...
    def wake_fd(self) -> int | None: ...
    def release_wake(self) -> None: ...
