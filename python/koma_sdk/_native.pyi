"""Stubs of the native module (python/src): the core's connection, as the
package drives it. `mypy.stubtest` checks them against the module."""

from typing import Final, Literal, final

from ._errors import KomaError

__all__ = [
    "BATCH_STRIDE",
    "Delivery",
    "NativeClient",
    "SLOT_BATCH_COUNTING",
    "SLOT_BATCH_EPOCH",
    "SLOT_EPOCH",
    "SLOT_TAKEN",
    "SLOT_TAKEN_BYTES",
    "TurnApproval",
    "TurnEnded",
    "TurnFailure",
    "TurnId",
    "TurnReady",
    "census",
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
#: What a stream gives: a batch `(0, json, lifts)` (its epoch and how it
#: counts are in the counters' `BATCH_EPOCH` and `BATCH_COUNTING` slots), the
#: overflow report `(1, dropped)`, or the end `(2, error or None)`.
_Taken = tuple[Literal[0], bytes, list[_LiftEntry]] | tuple[Literal[1], int] | tuple[Literal[2], KomaError | None]
#: A trace record: `(pid, kind, direction, text)`.
_TraceRecord = tuple[int | None, str, str | None, str]

# A turn's updates, a class per kind (the core's `TurnUpdate`). A JSON value
# is a one-item array whose long strings go back at its lifts `(0, *path, text)`.

@final
class TurnId:
    """The turn's submit was answered: its id."""

    @property
    def id(self) -> str: ...

@final
class TurnApproval:
    """An approval for `on_approval`: the `approval_requested` event's data."""

    @property
    def approval(self) -> str: ...
    @property
    def request(self) -> bytes: ...
    @property
    def lifts(self) -> list[_LiftEntry]: ...

@final
class TurnReady:
    """The turn's loop may take events now."""

@final
class TurnFailure:
    """Why a turn's result fails; `fails_id`: it never got an id, which fails too."""

    @property
    def error(self) -> KomaError: ...
    @property
    def cause(self) -> Literal["client", "handler", "stop"]: ...
    @property
    def approval(self) -> str | None: ...
    @property
    def fails_id(self) -> bool: ...

@final
class TurnEnded:
    """The turn is over: its result, why it fails (if it does), a traced turn's record."""

    @property
    def result(self) -> bytes: ...
    @property
    def lifts(self) -> list[_LiftEntry]: ...
    @property
    def failure(self) -> TurnFailure | None: ...
    @property
    def record(self) -> str | None: ...

@final
class Delivery:
    """Everything one wake brought (see `NativeClient.deliver`)."""

    @property
    def tokens(self) -> list[int]: ...
    @property
    def joined(self) -> bytes | None: ...
    @property
    def lifts(self) -> list[_LiftEntry]: ...
    @property
    def others(self) -> list[tuple[int, KomaError | None]]: ...
    @property
    def updates(self) -> list[tuple[int, TurnId | TurnApproval | TurnReady | TurnEnded]]: ...
    @property
    def trace(self) -> list[_TraceRecord]: ...
    @property
    def notes(self) -> str | None: ...

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
    def deliver(self) -> Delivery: ...
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
    ) -> TurnEnded | None: ...
    def take_turn_events(self, key: int) -> _Taken | None: ...
    def read_turn(self, key: int, reading: bool) -> None: ...
    def stop_turn(self, key: int) -> None: ...
    def interrupt_turn(self, key: int, token: int) -> bool: ...
    def answer_approval(self, key: int, approval: str, returned: object, shown: str) -> None: ...
    def approval_failed(self, key: int, approval: str, message: str) -> None: ...
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
