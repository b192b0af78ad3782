"""Generated from surface/protocol.json by scripts/surface.mjs: do not edit.

The protocol's results, events and methods, as koma_sdk hands them out:
results are frozen, slotted dataclasses with the wire's field names, events
one class per name (so a type checker narrows `data` by `name`), and the
client's protocol methods one coroutine each."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypedDict

from ._values import EventBase, obj

Status = Literal["idle", "running", "waiting"]
Decision = Literal["allow", "deny"]


@dataclass(frozen=True, slots=True)
class State:
    """The session's state. `waiting` means a turn waits for an approval."""

    session: str | None
    status: Status
    turn: str | None
    queued: int
    model: str | None

    @classmethod
    def _wire(cls, v: Any) -> State:
        d = obj(v)
        return cls(d.get("session"), d.get("status"), d.get("turn"), d.get("queued"), d.get("model"))


@dataclass(frozen=True, slots=True)
class SessionResult:
    """The result of `create` and `resume`."""

    session: str
    state: State

    @classmethod
    def _wire(cls, v: Any) -> SessionResult:
        d = obj(v)
        return cls(d.get("session"), State._wire(d.get("state")))


@dataclass(frozen=True, slots=True)
class SubmitResult:
    """The result of `submit`."""

    turn: str

    @classmethod
    def _wire(cls, v: Any) -> SubmitResult:
        d = obj(v)
        return cls(d.get("turn"))


@dataclass(frozen=True, slots=True)
class EnqueueResult:
    """The result of `enqueue`: 0 if the turn started at once, else its place behind the running turn."""

    position: int

    @classmethod
    def _wire(cls, v: Any) -> EnqueueResult:
        d = obj(v)
        return cls(d.get("position"))


@dataclass(frozen=True, slots=True)
class InterruptResult:
    """The result of `interrupt`: the turn stopped, if any."""

    turn: str | None

    @classmethod
    def _wire(cls, v: Any) -> InterruptResult:
        d = obj(v)
        return cls(d.get("turn"))


@dataclass(frozen=True, slots=True)
class InterruptAndSubmitResult:
    """The result of `interrupt_and_submit`: the turn stopped, if any, and the new one."""

    interrupted: str | None
    turn: str

    @classmethod
    def _wire(cls, v: Any) -> InterruptAndSubmitResult:
        d = obj(v)
        return cls(d.get("interrupted"), d.get("turn"))


class StateData(TypedDict):
    """The session's state. `waiting` means a turn waits for an approval."""

    session: str | None
    status: Status
    turn: str | None
    queued: int
    model: str | None


class TurnStartedData(TypedDict):
    """Data of `turn_started`."""

    turn: str
    text: str


class OutputData(TypedDict):
    """Data of `output`: a piece of the reply, streamed."""

    turn: str
    text: str


class ToolCallData(TypedDict):
    """Data of `tool_call`."""

    turn: str
    call: str
    tool: str
    input: Any


class ToolResultData(TypedDict):
    """Data of `tool_result`."""

    turn: str
    call: str
    output: Any
    error: bool


class ApprovalRequestedData(TypedDict):
    """Data of `approval_requested`: answer with `approve`."""

    turn: str
    approval: str
    tool: str
    input: Any


class _TurnFinishedDataFields(TypedDict):
    turn: str
    status: Literal["completed", "interrupted", "failed"]


class TurnFinishedData(_TurnFinishedDataFields, total=False):
    """Data of `turn_finished`."""

    error: str


class DiagnosticData(TypedDict):
    """Data of `diagnostic`."""

    level: Literal["info", "warning", "error"]
    message: str


class StateEvent(EventBase):
    """`state`: The session's state changed."""

    name: ClassVar[Literal["state"]] = "state"
    data: StateData


class TurnStartedEvent(EventBase):
    """`turn_started`: A turn started."""

    name: ClassVar[Literal["turn_started"]] = "turn_started"
    data: TurnStartedData


class OutputEvent(EventBase):
    """`output`: A piece of the reply."""

    name: ClassVar[Literal["output"]] = "output"
    data: OutputData


class ToolCallEvent(EventBase):
    """`tool_call`: The agent calls a tool."""

    name: ClassVar[Literal["tool_call"]] = "tool_call"
    data: ToolCallData


class ToolResultEvent(EventBase):
    """`tool_result`: A tool's result."""

    name: ClassVar[Literal["tool_result"]] = "tool_result"
    data: ToolResultData


class ApprovalRequestedEvent(EventBase):
    """`approval_requested`: The agent asks to use a tool: answer with `approve`."""

    name: ClassVar[Literal["approval_requested"]] = "approval_requested"
    data: ApprovalRequestedData


class TurnFinishedEvent(EventBase):
    """`turn_finished`: A turn ended."""

    name: ClassVar[Literal["turn_finished"]] = "turn_finished"
    data: TurnFinishedData


class DiagnosticEvent(EventBase):
    """`diagnostic`: A note of koma's."""

    name: ClassVar[Literal["diagnostic"]] = "diagnostic"
    data: DiagnosticData


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

#: The class of each catalog name (the core hands over catalog names only).
EVENT_CLASSES: dict[str, Any] = {
    "state": StateEvent,
    "turn_started": TurnStartedEvent,
    "output": OutputEvent,
    "tool_call": ToolCallEvent,
    "tool_result": ToolResultEvent,
    "approval_requested": ApprovalRequestedEvent,
    "turn_finished": TurnFinishedEvent,
    "diagnostic": DiagnosticEvent,
}


class Methods:
    """The protocol's methods of a client, each a coroutine named after the
    wire's method: required params positional, optional ones by keyword, and
    `timeout` (seconds) on each."""

    async def _call(self, method: str, params: Any, timeout: Any) -> Any:
        raise NotImplementedError

    async def create(
        self, *, cwd: str | os.PathLike[str] | None = None, model: str | None = None, timeout: float | None = None
    ) -> SessionResult:
        """Start a new session. Allowed only as the first request."""
        params: dict[str, Any] = {}
        if cwd is not None:
            params["cwd"] = os.fspath(cwd) if isinstance(cwd, os.PathLike) else cwd
        if model is not None:
            params["model"] = model
        result = await self._call("create", params, timeout)
        return SessionResult._wire(result)

    async def resume(self, session: str, *, after: int | None = None, timeout: float | None = None) -> SessionResult:
        """Reattach to a saved session; its events after `after` are sent again. Allowed only as the first request."""
        params: dict[str, Any] = {"session": session}
        if after is not None:
            params["after"] = after
        result = await self._call("resume", params, timeout)
        return SessionResult._wire(result)

    async def state(self, *, timeout: float | None = None) -> State:
        """The session's state."""
        result = await self._call("state", None, timeout)
        return State._wire(result)

    async def submit(self, text: str, *, timeout: float | None = None) -> SubmitResult:
        """Start a turn. Remote error `busy` while a turn runs."""
        params: dict[str, Any] = {"text": text}
        result = await self._call("submit", params, timeout)
        return SubmitResult._wire(result)

    async def enqueue(self, text: str, *, timeout: float | None = None) -> EnqueueResult:
        """Queue a text to run after the current turn."""
        params: dict[str, Any] = {"text": text}
        result = await self._call("enqueue", params, timeout)
        return EnqueueResult._wire(result)

    async def interrupt(self, *, timeout: float | None = None) -> InterruptResult:
        """Stop the running turn, if any."""
        result = await self._call("interrupt", None, timeout)
        return InterruptResult._wire(result)

    async def interrupt_and_submit(self, text: str, *, timeout: float | None = None) -> InterruptAndSubmitResult:
        """Stop the running turn and start this one, ahead of the queue."""
        params: dict[str, Any] = {"text": text}
        result = await self._call("interrupt_and_submit", params, timeout)
        return InterruptAndSubmitResult._wire(result)

    async def approve(self, approval: str, decision: Decision, *, timeout: float | None = None) -> None:
        """Answer an `approval_requested` event."""
        params: dict[str, Any] = {"approval": approval, "decision": decision}
        result = await self._call("approve", params, timeout)
        del result  # `{}`

    async def configure(self, *, model: str | None = None, timeout: float | None = None) -> State:
        """Change the model of later turns."""
        params: dict[str, Any] = {}
        if model is not None:
            params["model"] = model
        result = await self._call("configure", params, timeout)
        return State._wire(result)

    async def detach(self, *, timeout: float | None = None) -> None:
        """koma saves the session and exits 0. Settles after the answer and koma's exit; the events then end, and
        nothing is written after it."""
        result = await self._call("detach", None, timeout)
        del result  # `{}`


__all__ = [
    "ApprovalRequestedData",
    "ApprovalRequestedEvent",
    "Decision",
    "DiagnosticData",
    "DiagnosticEvent",
    "EnqueueResult",
    "Event",
    "InterruptAndSubmitResult",
    "InterruptResult",
    "OutputData",
    "OutputEvent",
    "SessionResult",
    "State",
    "StateData",
    "StateEvent",
    "Status",
    "SubmitResult",
    "ToolCallData",
    "ToolCallEvent",
    "ToolResultData",
    "ToolResultEvent",
    "TurnFinishedData",
    "TurnFinishedEvent",
    "TurnStartedData",
    "TurnStartedEvent",
]
