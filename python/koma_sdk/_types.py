"""Generated from schema/ by scripts/generate.mjs: do not edit.

The package's own values: the checked hello, the one overflow report, and
what a turn came to. Unknown fields are dropped, as they are for results and
events; a value that is not an object is `protocol_error` for that call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ._surface import Decision, Event
from ._values import Fields, Wire


@dataclass(frozen=True, slots=True)
class Binary(Wire):
    """The `binary` member of hello."""

    path: str
    version: str
    _fields: ClassVar[Fields] = (("path", None), ("version", None))


@dataclass(frozen=True, slots=True)
class Hello(Wire):
    """The first frame koma sends, checked: what `probe()` resolves with."""

    binary: Binary
    diagnostics: list[Any]
    capabilities: list[str]
    type: ClassVar[Literal["hello"]] = "hello"
    protocol: ClassVar[Literal[1]] = 1
    _fields: ClassVar[Fields] = (("binary", Binary), ("diagnostics", None), ("capabilities", None))


@dataclass(frozen=True, slots=True)
class Overflow(Wire):
    """The one report of an overflow: the event buffer (256 frames / 64 MiB) was full, so it was cleared and events
    were discarded until this report was taken."""

    dropped: int
    type: ClassVar[Literal["overflow"]] = "overflow"
    _fields: ClassVar[Fields] = (("dropped", None),)


#: What a loop over events yields: an event of the catalog, or the one overflow report. Narrow on `type`, then on
#: `name`.
EventItem = Event | Overflow

#: How a turn starts: `submit` fails with remote `busy` while another runs; `interrupt` interrupts the running turn
#: first (`interrupt_and_submit`).
TurnMode = Literal["submit", "interrupt"]

#: What `turn_finished` said, as koma said it (a status outside the catalog included); `unknown` when no
#: `turn_finished` came (the client failed or closed first).
TurnStatus = Literal["completed", "interrupted", "failed", "unknown"] | str


@dataclass(frozen=True, slots=True)
class ToolCall(Wire):
    """A tool call of a turn, from its `tool_call` and `tool_result` events: what was asked (`tool`, `input`), what
    came of it (`output`, `error`, once its result came), and the answer to its approval if one was asked."""

    call: str
    tool: str
    input: Any
    output: Any = None
    error: bool | None = None
    approval: Decision | None = None
    _fields: ClassVar[Fields] = (
        ("call", None),
        ("tool", None),
        ("input", None),
        ("output", None),
        ("error", None),
        ("approval", None),
    )


@dataclass(frozen=True, slots=True)
class TurnResult(Wire):
    """What a turn came to: `status` as `turn_finished` said, `output` the `output` texts joined, the tool calls, how
    many events the turn had, and whether an overflow cost its loop events. `turn` is null only in the `result` of
    an error of a turn that koma never started (the submit failed, or the options were bad)."""

    turn: str | None
    status: TurnStatus
    output: str
    tool_calls: list[ToolCall]
    events: int
    overflowed: bool
    _fields: ClassVar[Fields] = (
        ("turn", None),
        ("status", None),
        ("output", None),
        ("toolCalls", [ToolCall]),
        ("events", None),
        ("overflowed", None),
    )


__all__ = ["Binary", "EventItem", "Hello", "Overflow", "ToolCall", "TurnMode", "TurnResult", "TurnStatus"]
