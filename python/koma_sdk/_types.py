"""The values the package hands out: results with the wire's field names as
attributes, the events of the catalog (one class per name, so a type checker
narrows `data` by `name`), and the turn layer's result.

Unknown fields of a result are dropped, as they are for events and hello; a
field koma left out is `None` (nothing is made up), and a result that is not
an object is `protocol_error` for that call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypedDict, get_args

from ._errors import KomaError

Status = Literal["idle", "running", "waiting"]
Decision = Literal["allow", "deny"]
#: `"submit"`: the turn fails with remote `busy` while one runs;
#: `"interrupt"`: the running turn is interrupted first.
TurnMode = Literal["submit", "interrupt"]


# Results are frozen, slotted dataclasses: compared and shown by their fields.


def _obj(value: Any, what: str = "the result") -> Any:
    if not isinstance(value, dict):
        text = repr(value)
        raise KomaError("protocol_error", f"{what} is not a JSON object: {text[:200]}")
    return value


@dataclass(frozen=True, slots=True)
class Binary:
    path: str
    version: str


@dataclass(frozen=True, slots=True)
class Hello:
    """The checked hello: `protocol` is always 1."""

    binary: Binary
    diagnostics: list[Any]
    capabilities: list[str]
    type: Literal["hello"] = "hello"
    protocol: Literal[1] = 1

    @classmethod
    def _wire(cls, v: Any) -> Hello:
        d = _obj(v)
        b = _obj(d.get("binary"), "hello's binary")
        return cls(Binary(b["path"], b["version"]), d["diagnostics"], d["capabilities"])


@dataclass(frozen=True, slots=True)
class State:
    """`waiting`: a turn waits for an approval."""

    session: str | None
    status: Status
    turn: str | None
    queued: int
    model: str | None

    @classmethod
    def _wire(cls, v: Any) -> State:
        d = _obj(v)
        return cls(d.get("session"), d.get("status"), d.get("turn"), d.get("queued"), d.get("model"))


@dataclass(frozen=True, slots=True)
class SessionResult:
    """What `create` and `resume` answer."""

    session: str
    state: State

    @classmethod
    def _wire(cls, v: Any) -> SessionResult:
        d = _obj(v)
        return cls(d.get("session"), State._wire(d.get("state")))


@dataclass(frozen=True, slots=True)
class SubmitResult:
    turn: str

    @classmethod
    def _wire(cls, v: Any) -> SubmitResult:
        return cls(_obj(v).get("turn"))


@dataclass(frozen=True, slots=True)
class EnqueueResult:
    position: int

    @classmethod
    def _wire(cls, v: Any) -> EnqueueResult:
        return cls(_obj(v).get("position"))


@dataclass(frozen=True, slots=True)
class InterruptResult:
    """`turn`: the turn stopped, if any."""

    turn: str | None

    @classmethod
    def _wire(cls, v: Any) -> InterruptResult:
        return cls(_obj(v).get("turn"))


@dataclass(frozen=True, slots=True)
class InterruptAndSubmitResult:
    interrupted: str | None
    turn: str

    @classmethod
    def _wire(cls, v: Any) -> InterruptAndSubmitResult:
        d = _obj(v)
        return cls(d.get("interrupted"), d.get("turn"))


# ---- events: the data of each catalog name


class StateData(TypedDict):
    session: str | None
    status: Status
    turn: str | None
    queued: int
    model: str | None


class TurnStartedData(TypedDict):
    turn: str
    text: str


class OutputData(TypedDict):
    turn: str
    text: str


class ToolCallData(TypedDict):
    turn: str
    call: str
    tool: str
    input: Any


class ToolResultData(TypedDict):
    turn: str
    call: str
    output: Any
    error: bool


class ApprovalRequestedData(TypedDict):
    turn: str
    approval: str
    tool: str
    input: Any


class _TurnFinishedFields(TypedDict):
    turn: str
    status: Literal["completed", "interrupted", "failed"]


class TurnFinishedData(_TurnFinishedFields, total=False):
    error: str


class DiagnosticData(TypedDict):
    level: Literal["info", "warning", "error"]
    message: str


class _Event:
    """An event of the catalog: `seq`, `name` and the wire's `data` (a dict)."""

    __slots__ = ("seq", "data")
    type: ClassVar[Literal["event"]] = "event"
    name: ClassVar[str]

    def __init__(self, seq: int, data: Any) -> None:
        self.seq = seq
        self.data = data

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, _Event)
            and type(other) is type(self)
            and self.seq == other.seq
            and self.data == other.data
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(seq={self.seq!r}, data={self.data!r})"


class StateEvent(_Event):
    __slots__ = ()
    name: ClassVar[Literal["state"]] = "state"
    data: StateData


class TurnStartedEvent(_Event):
    __slots__ = ()
    name: ClassVar[Literal["turn_started"]] = "turn_started"
    data: TurnStartedData


class OutputEvent(_Event):
    __slots__ = ()
    name: ClassVar[Literal["output"]] = "output"
    data: OutputData


class ToolCallEvent(_Event):
    __slots__ = ()
    name: ClassVar[Literal["tool_call"]] = "tool_call"
    data: ToolCallData


class ToolResultEvent(_Event):
    __slots__ = ()
    name: ClassVar[Literal["tool_result"]] = "tool_result"
    data: ToolResultData


class ApprovalRequestedEvent(_Event):
    __slots__ = ()
    name: ClassVar[Literal["approval_requested"]] = "approval_requested"
    data: ApprovalRequestedData


class TurnFinishedEvent(_Event):
    __slots__ = ()
    name: ClassVar[Literal["turn_finished"]] = "turn_finished"
    data: TurnFinishedData


class DiagnosticEvent(_Event):
    __slots__ = ()
    name: ClassVar[Literal["diagnostic"]] = "diagnostic"
    data: DiagnosticData


@dataclass(frozen=True, slots=True)
class Overflow:
    """The one report of a full event buffer: `dropped` events were lost."""

    dropped: int
    type: ClassVar[Literal["overflow"]] = "overflow"


Event = (
    StateEvent
    | TurnStartedEvent
    | OutputEvent
    | ToolCallEvent
    | ToolResultEvent
    | ApprovalRequestedEvent
    | TurnFinishedEvent
    | DiagnosticEvent
)
EventItem = Event | Overflow

#: The class of each catalog name (the core hands over catalog names only).
EVENT_CLASSES: dict[str, Any] = {c.name: c for c in get_args(Event)}

# ---- the turn layer


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call of a turn: what was asked (`tool`, `input`), what came of
    it (`output`, `error`, `None` until its result), and the answer to its
    approval if one was asked (`approval`: by `on_approval`, by your
    `approve()`, or denied for want of anyone to answer)."""

    call: str
    tool: str
    input: Any
    output: Any = None
    error: bool | None = None
    approval: Decision | None = None


#: What `turn_finished` said (passed on as koma said it), or `"unknown"`
#: when the turn did not finish (the client failed or closed first).
TurnStatus = Literal["completed", "interrupted", "failed", "unknown"] | str


@dataclass(frozen=True, slots=True)
class TurnResult:
    """A turn's result: `status` as `turn_finished` said (`"unknown"` when
    none came), `output` the `output` texts joined, the tool calls, how many
    events the turn had, and whether an overflow cost its loop events.
    `turn` is `None` only in the `error.result` of a turn whose submit never
    answered."""

    turn: str | None
    status: TurnStatus
    output: str
    tool_calls: list[ToolCall]
    events: int
    overflowed: bool

    @classmethod
    def _wire(cls, v: Any) -> TurnResult:
        """The result as the core builds it (`toolCalls` as the protocol's turn layer names it)."""
        calls = [
            ToolCall(c["call"], c["tool"], c["input"], c.get("output"), c.get("error"), c.get("approval"))
            for c in v["toolCalls"]
        ]
        return cls(v["turn"], v["status"], v["output"], calls, v["events"], v["overflowed"])
