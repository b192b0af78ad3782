"""The values of the package that `surface/protocol.json` does not declare
(those are generated into `_surface.py`): the checked hello, the one
overflow report, and the turn layer's result.

Unknown fields are dropped, as they are for results and events; a value
that is not an object is `protocol_error` for that call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ._surface import Decision, Event
from ._values import obj

#: `"submit"`: the turn fails with remote `busy` while one runs;
#: `"interrupt"`: the running turn is interrupted first.
TurnMode = Literal["submit", "interrupt"]


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
        d = obj(v)
        b = obj(d.get("binary"), "hello's binary")
        return cls(Binary(b["path"], b["version"]), d["diagnostics"], d["capabilities"])


@dataclass(frozen=True, slots=True)
class Overflow:
    """The one report of a full event buffer: `dropped` events were lost."""

    dropped: int
    type: ClassVar[Literal["overflow"]] = "overflow"


EventItem = Event | Overflow

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
