"""Generated from schema/ by scripts/generate.mjs: do not edit.

The scenario format's parts (schema/scenario.schema.json) as koma_sdk.testing
exports them: frozen dataclasses whose `json()` is their object in koma-sim's
file (`_scenario.Part`), and the unions and enums of the format. A field left
out is left out of the file: None where the format takes no null, ABSENT where
it takes any JSON value (None is JSON's null there), and an empty list."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ._scenario import ABSENT, JSON, Absent, Members, Part, Tag
from ._surface import MethodName

#: What a turn that no entry matches gets: `"error"` refuses the request that would start it with the remote error
#: `unscripted`, which names the text (a queued text's turn fails), and `"agent"` lets koma-sim's keyword agent play
#: it.
Unscripted = Literal["agent", "error"]

#: The signals a `crash` step may die of.
CrashSignal = Literal[
    "SIGABRT",
    "SIGALRM",
    "SIGBUS",
    "SIGFPE",
    "SIGHUP",
    "SIGILL",
    "SIGINT",
    "SIGKILL",
    "SIGPIPE",
    "SIGQUIT",
    "SIGSEGV",
    "SIGTERM",
    "SIGUSR1",
    "SIGUSR2",
]


@dataclass(frozen=True)
class Scenario(Part):
    """A scenario: the turn entries, tried in order for each turn that starts; the scripted answers to requests; and
    what a turn that no entry matches gets."""

    turns: Sequence[ScriptedTurn | Mapping[str, Any]] = ()
    methods: Sequence[MethodAnswer | Mapping[str, Any]] = ()
    unscripted: Unscripted | None = None
    about: str | None = None
    _members: ClassVar[Members] = (
        ("turns", "turns", "list"),
        ("methods", "methods", "list"),
        ("unscripted", "unscripted", "optional"),
        ("about", "about", "optional"),
    )


@dataclass(frozen=True)
class ScriptedTurn(Part):
    """A turn entry: the turns it plays (those whose text `match` takes, `times` of them) and their steps."""

    steps: Sequence[Step | Mapping[str, Any]]
    match: Matcher | Mapping[str, Any] | None = None
    times: int | Literal["always"] | None = None
    about: str | None = None
    _members: ClassVar[Members] = (
        ("match", "match", "optional"),
        ("times", "times", "optional"),
        ("steps", "steps", "required"),
        ("about", "about", "optional"),
    )


@dataclass(frozen=True)
class TurnNumber(Part):
    """The Nth turn this koma-sim starts (1 is the first; every turn counts, scripted or not)."""

    n: int
    _members: ClassVar[Members] = (("n", "turn", "required"),)


@dataclass(frozen=True)
class Text(Part):
    """Exactly this text."""

    text: str
    _members: ClassVar[Members] = (("text", "text", "required"),)


@dataclass(frozen=True)
class Contains(Part):
    """A text that contains this (case-sensitive)."""

    text: str
    _members: ClassVar[Members] = (("text", "contains", "required"),)


@dataclass(frozen=True)
class Regex(Part):
    """A text in which this regular expression finds a match: Rust's `regex` syntax, not anchored unless it says `^`
    and `$` (`(?i)` ignores case). The check compiles it as koma-sim does; look-around and backreferences are
    refused (Rust has neither)."""

    pattern: str
    _members: ClassVar[Members] = (("pattern", "regex", "required"),)


@dataclass(frozen=True)
class Output(Part):
    """`output {turn, text}`."""

    text: str
    _tag: ClassVar[Tag] = ("do", "output")
    _members: ClassVar[Members] = (("text", "text", "required"),)


@dataclass(frozen=True)
class Tool(Part):
    """A call with a fresh id (`c-N`): `tool_call {turn, call, tool, input}`, then `tool_result {turn, call, output,
    error}`."""

    tool: str
    output: JSON
    input: JSON | Absent = ABSENT
    error: bool | None = None
    _tag: ClassVar[Tag] = ("do", "tool")
    _members: ClassVar[Members] = (
        ("tool", "tool", "required"),
        ("input", "input", "any"),
        ("output", "output", "required"),
        ("error", "error", "optional"),
    )


@dataclass(frozen=True)
class Approval(Part):
    """A call with fresh ids (`c-N`, `a-N`): `tool_call`, `approval_requested {turn, approval, tool, input}` and
    `state` (waiting); the turn waits for `approve`. The decision's `tool_result` and a `state` (running) come
    before the answer to `approve`; then the branch's steps play, then the rest of the turn."""

    tool: str
    input: JSON | Absent = ABSENT
    allow: Branch | Mapping[str, Any] | None = None
    deny: Branch | Mapping[str, Any] | None = None
    _tag: ClassVar[Tag] = ("do", "approval")
    _members: ClassVar[Members] = (
        ("tool", "tool", "required"),
        ("input", "input", "any"),
        ("allow", "allow", "optional"),
        ("deny", "deny", "optional"),
    )


@dataclass(frozen=True)
class Branch(Part):
    """What follows a decision of an approval: the call's `tool_result`, then these steps."""

    output: JSON | Absent = ABSENT
    error: bool | None = None
    steps: Sequence[Step | Mapping[str, Any]] = ()
    _members: ClassVar[Members] = (
        ("output", "output", "any"),
        ("error", "error", "optional"),
        ("steps", "steps", "list"),
    )


@dataclass(frozen=True)
class Pause(Part):
    """With `ms`, waits that long; without, until the turn is interrupted (or koma-sim stops). The state stays
    `running`, and an interrupt ends the turn at once either way."""

    ms: int | None = None
    _tag: ClassVar[Tag] = ("do", "pause")
    _members: ClassVar[Members] = (("ms", "ms", "optional"),)


@dataclass(frozen=True)
class Event(Part):
    """An event of this name and data, numbered as every event is: outside the catalog too, or a catalog name with odd
    data."""

    name: str
    data: JSON | Absent = ABSENT
    _tag: ClassVar[Tag] = ("do", "event")
    _members: ClassVar[Members] = (("name", "name", "required"), ("data", "data", "any"))


@dataclass(frozen=True)
class Finish(Part):
    """`turn_finished {turn, status, error?}`: the turn ends here, so nothing may follow it in its list; the queue goes
    on."""

    status: str | None = None
    error: str | None = None
    _tag: ClassVar[Tag] = ("do", "finish")
    _members: ClassVar[Members] = (("status", "status", "optional"), ("error", "error", "optional"))


@dataclass(frozen=True)
class Exit(Part):
    """koma-sim exits with this code; what it queued before is written first."""

    code: int
    _tag: ClassVar[Tag] = ("do", "exit")
    _members: ClassVar[Members] = (("code", "code", "required"),)


@dataclass(frozen=True)
class Crash(Part):
    """koma-sim dies of this signal (its default action, without a core file, whatever the fault switches say of it);
    what it queued before is written first."""

    signal: CrashSignal = "SIGKILL"
    _tag: ClassVar[Tag] = ("do", "crash")
    _members: ClassVar[Members] = (("signal", "signal", "required"),)


@dataclass(frozen=True)
class StopAnswering(Part):
    """No more answers and no more events: requests are still read (and recorded), and `detach` is ignored; koma-sim
    exits 0 at the end of stdin and dies of SIGTERM."""

    _tag: ClassVar[Tag] = ("do", "stop_answering")
    _members: ClassVar[Members] = ()


@dataclass(frozen=True)
class BrokenFrame(Part):
    """This line on koma-sim's stdout, then the terminator; then the turn goes on."""

    line: str | None = None
    _tag: ClassVar[Tag] = ("do", "broken_frame")
    _members: ClassVar[Members] = (("line", "line", "optional"),)


@dataclass(frozen=True)
class MethodAnswer(Part):
    """A scripted answer to the requests of `method` (the `nth` one, or every one). With `result` or `error` the
    request is answered so and not carried out; with `delay_ms` alone it is carried out at once and its answer goes
    that much later."""

    method: MethodName
    nth: int | None = None
    result: JSON | Absent = ABSENT
    error: ScriptedError | Mapping[str, Any] | None = None
    delay_ms: int | None = None
    about: str | None = None
    _members: ClassVar[Members] = (
        ("method", "method", "required"),
        ("nth", "nth", "optional"),
        ("result", "result", "any"),
        ("error", "error", "optional"),
        ("delay_ms", "delay_ms", "optional"),
        ("about", "about", "optional"),
    )


@dataclass(frozen=True)
class ScriptedError(Part):
    """A scripted remote error."""

    code: str
    message: str | None = None
    data: JSON | Absent = ABSENT
    _members: ClassVar[Members] = (
        ("code", "code", "required"),
        ("message", "message", "optional"),
        ("data", "data", "any"),
    )


#: Which texts a turn entry plays: exactly one matcher.
Matcher = TurnNumber | Text | Contains | Regex

#: What the agent does next: its `do` says which step it is.
Step = Output | Tool | Approval | Pause | Event | Finish | Exit | Crash | StopAnswering | BrokenFrame


__all__ = [
    "Approval",
    "Branch",
    "BrokenFrame",
    "Contains",
    "Crash",
    "CrashSignal",
    "Event",
    "Exit",
    "Finish",
    "Matcher",
    "MethodAnswer",
    "Output",
    "Pause",
    "Regex",
    "Scenario",
    "ScriptedError",
    "ScriptedTurn",
    "Step",
    "StopAnswering",
    "Text",
    "Tool",
    "TurnNumber",
    "Unscripted",
]
