"""The values the package hands out: results with the wire's field names as
attributes, the events of the catalog (one class per name, so a type checker
narrows `data` by `name`), and the turn layer's result.

Unknown fields of a result are dropped, as they are for events and hello; a
field koma left out is `None` (nothing is made up), and a result that is not
an object is `protocol_error` for that call."""

from __future__ import annotations

from typing import Any, ClassVar, Dict, List, Literal, Optional, TypedDict, Union, get_args

from ._errors import KomaError

Status = Literal["idle", "running", "waiting"]
Decision = Literal["allow", "deny"]
#: `"submit"`: the turn fails with remote `busy` while one runs;
#: `"interrupt"`: the running turn is interrupted first.
TurnMode = Literal["submit", "interrupt"]


def _obj(value: Any, what: str = "the result") -> Any:
    if not isinstance(value, dict):
        text = repr(value)
        raise KomaError("protocol_error", f"{what} is not a JSON object: {text[:200]}")
    return value


class _Record:
    """A small value with attributes (and `==`, `repr`) by its slots."""

    __slots__ = ()

    def _public(self) -> List[str]:
        slots: tuple[str, ...] = self.__slots__
        return [k for k in slots if not k.startswith("_")]

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, k) == getattr(other, k) for k in self._public())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._public())
        return f"{type(self).__name__}({fields})"


class Binary(_Record):
    __slots__ = ("path", "version")

    def __init__(self, path: str, version: str) -> None:
        self.path = path
        self.version = version


class Hello(_Record):
    """The checked hello: `protocol` is always 1."""

    __slots__ = ("type", "protocol", "binary", "diagnostics", "capabilities")

    def __init__(self, binary: Binary, diagnostics: List[Any], capabilities: List[str]) -> None:
        self.type: Literal["hello"] = "hello"
        self.protocol: Literal[1] = 1
        self.binary = binary
        self.diagnostics = diagnostics
        self.capabilities = capabilities

    @classmethod
    def _wire(cls, v: Any) -> Hello:
        d = _obj(v)
        b = _obj(d.get("binary"), "hello's binary")
        return cls(Binary(b["path"], b["version"]), d["diagnostics"], d["capabilities"])


class State(_Record):
    """`waiting`: a turn waits for an approval."""

    __slots__ = ("session", "status", "turn", "queued", "model")

    def __init__(
        self, session: Optional[str], status: Status, turn: Optional[str], queued: int, model: Optional[str]
    ) -> None:
        self.session = session
        self.status = status
        self.turn = turn
        self.queued = queued
        self.model = model

    @classmethod
    def _wire(cls, v: Any) -> State:
        d = _obj(v)
        return cls(d.get("session"), d.get("status"), d.get("turn"), d.get("queued"), d.get("model"))


class SessionResult(_Record):
    """What `create` and `resume` answer."""

    __slots__ = ("session", "state")

    def __init__(self, session: str, state: State) -> None:
        self.session = session
        self.state = state

    @classmethod
    def _wire(cls, v: Any) -> SessionResult:
        d = _obj(v)
        return cls(d.get("session"), State._wire(d.get("state")))


class SubmitResult(_Record):
    __slots__ = ("turn",)

    def __init__(self, turn: str) -> None:
        self.turn = turn

    @classmethod
    def _wire(cls, v: Any) -> SubmitResult:
        return cls(_obj(v).get("turn"))


class EnqueueResult(_Record):
    __slots__ = ("position",)

    def __init__(self, position: int) -> None:
        self.position = position

    @classmethod
    def _wire(cls, v: Any) -> EnqueueResult:
        return cls(_obj(v).get("position"))


class InterruptResult(_Record):
    """`turn`: the turn stopped, if any."""

    __slots__ = ("turn",)

    def __init__(self, turn: Optional[str]) -> None:
        self.turn = turn

    @classmethod
    def _wire(cls, v: Any) -> InterruptResult:
        return cls(_obj(v).get("turn"))


class InterruptAndSubmitResult(_Record):
    __slots__ = ("interrupted", "turn")

    def __init__(self, interrupted: Optional[str], turn: str) -> None:
        self.interrupted = interrupted
        self.turn = turn

    @classmethod
    def _wire(cls, v: Any) -> InterruptAndSubmitResult:
        d = _obj(v)
        return cls(d.get("interrupted"), d.get("turn"))


# ---- events: the data of each catalog name


class StateData(TypedDict):
    session: Optional[str]
    status: Status
    turn: Optional[str]
    queued: int
    model: Optional[str]


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
        return isinstance(other, _Event) and type(other) is type(self) and self.seq == other.seq and self.data == other.data

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


class Overflow(_Record):
    """The one report of a full event buffer: `dropped` events were lost."""

    __slots__ = ("dropped",)
    type: ClassVar[Literal["overflow"]] = "overflow"

    def __init__(self, dropped: int) -> None:
        self.dropped = dropped


Event = Union[
    StateEvent,
    TurnStartedEvent,
    OutputEvent,
    ToolCallEvent,
    ToolResultEvent,
    ApprovalRequestedEvent,
    TurnFinishedEvent,
    DiagnosticEvent,
]
EventItem = Union[Event, Overflow]

#: The class of each catalog name (the core hands over catalog names only).
EVENT_CLASSES: Dict[str, Any] = {c.name: c for c in get_args(Event)}

# ---- the turn layer


class ToolCall(_Record):
    """A tool call of a turn: what was asked (`tool`, `input`), what came of
    it (`output`, `error`, `None` until its result), and the answer to its
    approval if one was asked (`approval`)."""

    __slots__ = ("call", "tool", "input", "output", "error", "approval")

    def __init__(
        self,
        call: str,
        tool: str,
        input: Any,
        output: Any = None,
        error: Optional[bool] = None,
        approval: Optional[Decision] = None,
    ) -> None:
        self.call = call
        self.tool = tool
        self.input = input
        self.output = output
        self.error = error
        self.approval = approval


#: What `turn_finished` said (passed on as koma said it), or `"unknown"`
#: when the turn did not finish (the client failed or closed first).
TurnStatus = Union[Literal["completed", "interrupted", "failed", "unknown"], str]


class TurnResult(_Record):
    """A turn's result: `status` as `turn_finished` said (`"unknown"` when
    none came), `output` the `output` texts joined, the tool calls, how many
    events the turn had, and whether an overflow cost its events. `turn` is
    `None` only in the `error.result` of a turn whose submit never answered."""

    __slots__ = ("turn", "status", "output", "tool_calls", "events", "overflowed")

    def __init__(
        self,
        turn: Optional[str],
        status: TurnStatus,
        output: str,
        tool_calls: List[ToolCall],
        events: int,
        overflowed: bool,
    ) -> None:
        self.turn = turn
        self.status = status
        self.output = output
        self.tool_calls = tool_calls
        self.events = events
        self.overflowed = overflowed

    @classmethod
    def _wire(cls, v: Any) -> TurnResult:
        """The result as the core builds it (`toolCalls` as the protocol's turn layer names it)."""
        calls = [
            ToolCall(c["call"], c["tool"], c["input"], c.get("output"), c.get("error"), c.get("approval"))
            for c in v["toolCalls"]
        ]
        return cls(v["turn"], v["status"], v["output"], calls, v["events"], v["overflowed"])
