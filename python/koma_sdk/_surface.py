"""Generated from schema/ by scripts/generate.mjs: do not edit.

The protocol's results, events and methods, as koma_sdk hands them out:
results are frozen, slotted dataclasses with the wire's field names, events
one class per name (so a type checker narrows `data` by `name`), and the
client's protocol methods one coroutine each."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypedDict

from ._values import EventBase, Fields, Requests, Wire

#: The answer to an approval request.
Decision = Literal["allow", "deny"]

#: What the session is doing: `waiting` means a turn waits for an approval.
Status = Literal["idle", "running", "waiting"]


@dataclass(frozen=True, slots=True)
class State(Wire):
    """The session's state. `waiting` means a turn waits for an approval."""

    session: str | None
    status: Status
    turn: str | None
    queued: int
    model: str | None
    _fields: ClassVar[Fields] = (("session", None), ("status", None), ("turn", None), ("queued", None), ("model", None))


class StateData(TypedDict):
    """The session's state. `waiting` means a turn waits for an approval."""

    session: str | None
    status: Status
    turn: str | None
    queued: int
    model: str | None


@dataclass(frozen=True, slots=True)
class SessionResult(Wire):
    """The result of `create` and `resume`."""

    session: str
    state: State
    _fields: ClassVar[Fields] = (("session", None), ("state", State))


@dataclass(frozen=True, slots=True)
class SubmitResult(Wire):
    """The result of `submit`."""

    turn: str
    _fields: ClassVar[Fields] = (("turn", None),)


@dataclass(frozen=True, slots=True)
class EnqueueResult(Wire):
    """The result of `enqueue`: 0 if the turn started at once, else its place behind the running turn."""

    position: int
    _fields: ClassVar[Fields] = (("position", None),)


@dataclass(frozen=True, slots=True)
class InterruptResult(Wire):
    """The result of `interrupt`: the turn stopped, if any."""

    turn: str | None
    _fields: ClassVar[Fields] = (("turn", None),)


@dataclass(frozen=True, slots=True)
class InterruptAndSubmitResult(Wire):
    """The result of `interrupt_and_submit`: the turn stopped, if any, and the new one."""

    interrupted: str | None
    turn: str
    _fields: ClassVar[Fields] = (("interrupted", None), ("turn", None))


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
    """The session's state changed."""

    name: ClassVar[Literal["state"]] = "state"
    data: StateData


class TurnStartedEvent(EventBase):
    """A turn started."""

    name: ClassVar[Literal["turn_started"]] = "turn_started"
    data: TurnStartedData


class OutputEvent(EventBase):
    """A piece of the reply."""

    name: ClassVar[Literal["output"]] = "output"
    data: OutputData


class ToolCallEvent(EventBase):
    """The agent calls a tool."""

    name: ClassVar[Literal["tool_call"]] = "tool_call"
    data: ToolCallData


class ToolResultEvent(EventBase):
    """A tool's result."""

    name: ClassVar[Literal["tool_result"]] = "tool_result"
    data: ToolResultData


class ApprovalRequestedEvent(EventBase):
    """The agent asks to use a tool: answer with `approve`."""

    name: ClassVar[Literal["approval_requested"]] = "approval_requested"
    data: ApprovalRequestedData


class TurnFinishedEvent(EventBase):
    """A turn ended."""

    name: ClassVar[Literal["turn_finished"]] = "turn_finished"
    data: TurnFinishedData


class DiagnosticEvent(EventBase):
    """A note of koma's."""

    name: ClassVar[Literal["diagnostic"]] = "diagnostic"
    data: DiagnosticData


#: An event of the catalog. Narrow on `name`. An event with another name is checked for its seq, then ignored.
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

#: The name of one of the protocol's methods (on the wire).
MethodName = Literal[
    "create",
    "resume",
    "state",
    "submit",
    "enqueue",
    "interrupt",
    "interrupt_and_submit",
    "approve",
    "configure",
    "detach",
]


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


class Methods(Requests):
    """The protocol's methods of a client, each a coroutine named after the
    wire's method: required params positional, optional ones by keyword, and
    `timeout` (seconds) on each."""

    async def create(
        self, *, cwd: str | os.PathLike[str] | None = None, model: str | None = None, timeout: float | None = None
    ) -> SessionResult:
        """Start a new session. Allowed only as the first request."""
        return await self._ask("create", SessionResult, {}, timeout, cwd=cwd, model=model)

    async def resume(self, session: str, *, after: int | None = None, timeout: float | None = None) -> SessionResult:
        """Reattach to a saved session; its events after `after` are sent again. Allowed only as the first request."""
        return await self._ask("resume", SessionResult, {"session": session}, timeout, after=after)

    async def state(self, *, timeout: float | None = None) -> State:
        """The session's state."""
        return await self._ask("state", State, None, timeout)

    async def submit(self, text: str, *, timeout: float | None = None) -> SubmitResult:
        """Start a turn. Remote error `busy` while a turn runs."""
        return await self._ask("submit", SubmitResult, {"text": text}, timeout)

    async def enqueue(self, text: str, *, timeout: float | None = None) -> EnqueueResult:
        """Queue a text to run after the current turn."""
        return await self._ask("enqueue", EnqueueResult, {"text": text}, timeout)

    async def interrupt(self, *, timeout: float | None = None) -> InterruptResult:
        """Stop the running turn, if any."""
        return await self._ask("interrupt", InterruptResult, None, timeout)

    async def interrupt_and_submit(self, text: str, *, timeout: float | None = None) -> InterruptAndSubmitResult:
        """Stop the running turn and start this one, ahead of the queue."""
        return await self._ask("interrupt_and_submit", InterruptAndSubmitResult, {"text": text}, timeout)

    async def approve(self, approval: str, decision: Decision, *, timeout: float | None = None) -> None:
        """Answer an `approval_requested` event."""
        return await self._tell("approve", {"approval": approval, "decision": decision}, timeout)

    async def configure(self, *, model: str | None = None, timeout: float | None = None) -> State:
        """Change the model of later turns."""
        return await self._ask("configure", State, {}, timeout, model=model)

    async def detach(self, *, timeout: float | None = None) -> None:
        """koma saves the session and exits 0. Settles after the answer and koma's exit; the events then end, and
        nothing is written after it."""
        return await self._tell("detach", None, timeout)


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
    "MethodName",
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
