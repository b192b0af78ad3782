"""A fake Koma for your program's tests: koma-sim plays a scenario (what
each turn does, and how requests are answered) as a real child through the
real transport, and records every request your program sent.

    from koma_sdk.testing import Approval, Branch, FakeKoma, Finish, Scenario, ScriptedTurn

    scenario = Scenario(turns=[ScriptedTurn([Approval("git_push", deny=Branch(steps=[Finish("failed")]))])])
    async with FakeKoma(scenario) as koma:
        await koma.client.create()
        result = await koma.client.run("deploy", on_approval="deny")
        assert koma.approvals() == [("a-1", "deny")]

The classes mirror koma-sim's scenario format (docs/koma-sim.md in the
repository, "Scenarios"): koma-sim checks a scenario (`koma-sim
check-scenario`) before a fake starts, and its first mistake raises
`ScenarioError`, naming the turn and the field. Under pytest, the `fake_koma` fixture (registered by the
package) makes one and stops it when the test ends. docs/testing-python.md
in the repository is the guide.
"""

from __future__ import annotations

import enum
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
    TypedDict,
    Union,
)

from . import sim
from ._client import Client
from ._fake_folder import make_folder
from ._scenario import Cycle, ScenarioError, check, hide_mistake
from ._surface import Decision

if TYPE_CHECKING:
    from types import TracebackType

__all__ = [
    "ABSENT",
    "JSON",
    "Approval",
    "Branch",
    "ClientOptions",
    "Contains",
    "Crash",
    "CrashSignal",
    "Event",
    "Exit",
    "FakeKoma",
    "Finish",
    "Matcher",
    "MethodAnswer",
    "Output",
    "Pause",
    "Regex",
    "Request",
    "Scenario",
    "ScenarioError",
    "ScriptedError",
    "ScriptedTurn",
    "Step",
    "StopAnswering",
    "BrokenFrame",
    "Text",
    "Tool",
    "TurnNumber",
    "check_scenario",
    "read_record",
]

#: Any JSON value (`input`, `output`, `data`, `result`).
JSON = Union[None, bool, int, float, str, Sequence["JSON"], Mapping[str, "JSON"]]  # noqa: UP007 - a recursive alias


class _Absent(enum.Enum):
    ABSENT = "ABSENT"

    def __repr__(self) -> str:
        return "ABSENT"


#: A field left out (where `None` would be JSON's null).
ABSENT = _Absent.ABSENT

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


def _opt(**fields: Any) -> dict[str, Any]:
    """The fields given: those that are not None."""
    return {k: _json(v) for k, v in fields.items() if v is not None}


def _any(**fields: Any) -> dict[str, Any]:
    """The fields of any JSON value that are given: those that are not ABSENT (None is JSON's null)."""
    return {k: _json(v) for k, v in fields.items() if v is not ABSENT}


def _json(v: Any, _open: frozenset[int] = frozenset()) -> Any:
    """A value of the format as JSON: the classes below by their `json()`,
    the rest as it is (what JSON cannot hold is left for the check to name;
    a cycle, where it comes back)."""
    if isinstance(v, _Part):
        return v.json()
    if isinstance(v, (Mapping, list, tuple)):
        if id(v) in _open:
            return Cycle()
        inner = _open | {id(v)}
        if isinstance(v, Mapping):
            return {k: _json(x, inner) for k, x in v.items()}
        return [_json(x, inner) for x in v]
    return v


class _Part:
    """A piece of a scenario: `json()` is its object in koma-sim's file."""

    def json(self) -> Any:
        raise NotImplementedError


# ---------------------------------------------------------------- matchers


@dataclass(frozen=True)
class TurnNumber(_Part):
    """The Nth turn this koma-sim starts (1 is the first; every turn counts)."""

    n: int

    def json(self) -> Any:
        return {"turn": self.n}


@dataclass(frozen=True)
class Text(_Part):
    """Exactly this text."""

    text: str

    def json(self) -> Any:
        return {"text": self.text}


@dataclass(frozen=True)
class Contains(_Part):
    """A text that contains this (case-sensitive)."""

    text: str

    def json(self) -> Any:
        return {"contains": self.text}


@dataclass(frozen=True)
class Regex(_Part):
    """A text in which this regular expression finds a match: Rust's `regex`
    syntax (not anchored unless it says `^` and `$`; `(?i)` ignores case).
    The check compiles it as koma-sim does; look-around and backreferences
    are refused (Rust has neither)."""

    pattern: str

    def json(self) -> Any:
        return {"regex": self.pattern}


Matcher = TurnNumber | Text | Contains | Regex

# ---------------------------------------------------------------- steps


@dataclass(frozen=True)
class Output(_Part):
    """`output {turn, text}`."""

    text: str

    def json(self) -> Any:
        return {"do": "output", "text": self.text}


@dataclass(frozen=True)
class Tool(_Part):
    """A tool call and its result: `tool_call {turn, call, tool, input}`, then
    `tool_result {turn, call, output, error}` (`input` `{}` and `error`
    false unless given)."""

    tool: str
    output: JSON
    input: JSON | _Absent = ABSENT
    error: bool | None = None

    def json(self) -> Any:
        return {
            "do": "tool",
            "tool": self.tool,
            **_any(input=self.input),
            "output": _json(self.output),
            **_opt(error=self.error),
        }


@dataclass(frozen=True)
class Branch(_Part):
    """What follows a decision of an approval: the call's `tool_result`
    output (`"allowed"` or `"denied"` unless given) and error (false after
    an allow, true after a deny, unless given), then these steps."""

    output: JSON | _Absent = ABSENT
    error: bool | None = None
    steps: Sequence[Step | Mapping[str, Any]] = ()

    def json(self) -> Any:
        return {**_any(output=self.output), **_opt(error=self.error, steps=list(self.steps) if self.steps else None)}


@dataclass(frozen=True)
class Approval(_Part):
    """A tool call that asks for approval (`approval_requested`, `state`
    waiting) and waits for `approve`; then the branch of the decision, then
    the rest of the turn."""

    tool: str
    input: JSON | _Absent = ABSENT
    allow: Branch | None = None
    deny: Branch | None = None

    def json(self) -> Any:
        return {"do": "approval", "tool": self.tool, **_any(input=self.input), **_opt(allow=self.allow, deny=self.deny)}


@dataclass(frozen=True)
class Pause(_Part):
    """Wait `ms` milliseconds; without `ms`, until the turn is interrupted (or koma-sim stops)."""

    ms: int | None = None

    def json(self) -> Any:
        return {"do": "pause", **_opt(ms=self.ms)}


@dataclass(frozen=True)
class Event(_Part):
    """An event of any name (outside the catalog too) with this data (`{}` unless given)."""

    name: str
    data: JSON | _Absent = ABSENT

    def json(self) -> Any:
        return {"do": "event", "name": self.name, **_any(data=self.data)}


@dataclass(frozen=True)
class Finish(_Part):
    """`turn_finished {turn, status, error?}` (status `"completed"` unless
    given; any string): the turn ends here, so it is the last step of its list."""

    status: str | None = None
    error: str | None = None

    def json(self) -> Any:
        return {"do": "finish", **_opt(status=self.status, error=self.error)}


@dataclass(frozen=True)
class Exit(_Part):
    """koma-sim exits with this code (0 to 255); what it queued is written first."""

    code: int

    def json(self) -> Any:
        return {"do": "exit", "code": self.code}


@dataclass(frozen=True)
class Crash(_Part):
    """koma-sim dies of this signal; what it queued is written first."""

    signal: CrashSignal = "SIGKILL"

    def json(self) -> Any:
        return {"do": "crash", "signal": self.signal}


@dataclass(frozen=True)
class StopAnswering(_Part):
    """No more answers and no more events: a hung koma (it still reads and records requests)."""

    def json(self) -> Any:
        return {"do": "stop_answering"}


@dataclass(frozen=True)
class BrokenFrame(_Part):
    """This line on koma-sim's stdout (`"this line is not JSON (koma-sim
    scenario)"` unless given); then the turn goes on."""

    line: str | None = None

    def json(self) -> Any:
        return {"do": "broken_frame", **_opt(line=self.line)}


Step = Output | Tool | Approval | Pause | Event | Finish | Exit | Crash | StopAnswering | BrokenFrame

# ---------------------------------------------------------------- turns, answers, the scenario


@dataclass(frozen=True)
class ScriptedTurn(_Part):
    """A turn entry: the turns it plays (those `match` takes, any text if
    None; `times` of them, 1 unless given, or `"always"`) and their steps.
    When the steps run out, the turn finishes `completed`."""

    steps: Sequence[Step | Mapping[str, Any]]
    match: Matcher | Mapping[str, Any] | None = None
    times: int | Literal["always"] | None = None
    about: str | None = None

    def json(self) -> Any:
        return {**_opt(about=self.about, match=self.match, times=self.times), "steps": _json(list(self.steps))}


@dataclass(frozen=True)
class ScriptedError(_Part):
    """A scripted remote error (`message` `"<code> (scripted by the scenario)"` unless given)."""

    code: str
    message: str | None = None
    data: JSON | _Absent = ABSENT

    def json(self) -> Any:
        return {"code": self.code, **_opt(message=self.message), **_any(data=self.data)}


@dataclass(frozen=True)
class MethodAnswer(_Part):
    """A scripted answer to the requests of `method` (the `nth` one, 1 the
    first, or every one). With `result` or `error` the request is answered
    so and not carried out; with `delay_ms` alone it is carried out at once
    and its answer goes that much later."""

    method: str
    nth: int | None = None
    result: JSON | _Absent = ABSENT
    error: ScriptedError | None = None
    delay_ms: int | None = None
    about: str | None = None

    def json(self) -> Any:
        return {
            **_opt(about=self.about),
            "method": self.method,
            **_opt(nth=self.nth),
            **_any(result=self.result),
            **_opt(error=self.error, delay_ms=self.delay_ms),
        }


@dataclass(frozen=True)
class Scenario(_Part):
    """koma-sim's scenario (`KOMA_SIM_SCENARIO`), format 1: the turn entries,
    tried in order for each turn that starts; the scripted answers; and what
    a turn no entry matches gets: `"error"` (the default: the request is
    refused with the remote error `unscripted`) or `"agent"` (koma-sim's
    keyword agent plays it)."""

    turns: Sequence[ScriptedTurn | Mapping[str, Any]] = ()
    methods: Sequence[MethodAnswer | Mapping[str, Any]] = ()
    unscripted: Literal["error", "agent"] | None = None
    about: str | None = None

    def json(self) -> Any:
        return _opt(
            about=self.about,
            unscripted=self.unscripted,
            turns=list(self.turns) if self.turns else None,
            methods=list(self.methods) if self.methods else None,
        )


def check_scenario(scenario: Scenario | Mapping[str, Any]) -> str:
    """Check a scenario (the classes above, or koma-sim's file as a dict) as
    koma-sim checks its file: its JSON text, or `ScenarioError` naming the
    first mistake (`bad scenario: <entry>: <field>: <problem>`)."""
    __tracebackhide__ = hide_mistake
    return check(_json(scenario))


# ---------------------------------------------------------------- the record


@dataclass(frozen=True)
class Request:
    """A request koma-sim read, as its record has it: its number among the
    requests that koma-sim read (from 1), that koma-sim's pid, and the id,
    method (None when it was missing) and params (`{}` when missing) sent."""

    n: int
    pid: int
    id: str
    method: str | None
    params: dict[str, Any]


def read_record(path: str | os.PathLike[str]) -> list[Request]:
    """The requests of a record file (`KOMA_SIM_RECORD`), in order; none when it is not there yet."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    # Each line is written whole; a line without its terminator is not there yet.
    lines = text.split("\n")[:-1]
    out = []
    for line in lines:
        if line.strip():
            r = json.loads(line)
            out.append(Request(n=r["n"], pid=r["pid"], id=r["id"], method=r["method"], params=r["params"]))
    return out


# ---------------------------------------------------------------- the fake

#: How long `stop()` waits for a killed koma-sim to be reaped: a bound
#: against a hang, far above what a kill takes.
_STOP_LIMIT = 30.0


class _ClientOptionsBase(TypedDict):
    executable: str
    env: dict[str, str]


class ClientOptions(_ClientOptionsBase, total=False):
    """The options of a `Client` of a fake: `Client(**koma.options)`."""

    cwd: str | os.PathLike[str]
    trace: bool
    hello_timeout: float | None


def _check_options(
    *, executable: object, env: object, delay_ms: object, dir: object, cwd: object, trace: object
) -> None:
    """A fake's options, checked before anything is made (a TypeError
    naming the option, as `Client` checks its own)."""
    __tracebackhide__ = hide_mistake
    paths = {"executable": executable, "dir": dir, "cwd": cwd}
    for name, value in paths.items():
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise TypeError(f"FakeKoma: `{name}` must be a path (a str or os.PathLike), not {value!r}")
    if trace is not None and not isinstance(trace, bool):
        raise TypeError(f"FakeKoma: `trace` must be a bool, not {trace!r}")
    if env is not None and not (
        isinstance(env, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
    ):
        raise TypeError(f"FakeKoma: `env` must be a mapping of str to str, not {env!r}")
    if isinstance(delay_ms, bool) or not isinstance(delay_ms, int) or delay_ms < 0:
        raise TypeError(f"FakeKoma: `delay_ms` must be an int of milliseconds >= 0, not {delay_ms!r}")


class FakeKoma:
    """koma-sim playing a scenario. Making one checks the scenario (a
    `ScenarioError` before anything starts), writes it into a folder (a new
    temporary one unless `dir` is given) beside a session home and the
    record of requests, and makes `client`; nothing starts until the
    client's first call. `aclose()` (and `async with`) closes every client
    it made and removes the temporary folder.

    `executable` is koma-sim (`koma_sdk.sim.path()` unless given), `env`
    more of its environment (`KOMA_SIM_FAULT`, ...), `delay_ms` its
    `KOMA_SIM_DELAY_MS` (scripted steps are not paced by it), and `cwd`,
    `trace` and `hello_timeout` the client's options."""

    def __init__(
        self,
        scenario: Scenario | Mapping[str, Any],
        *,
        executable: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        delay_ms: int = 0,
        dir: str | os.PathLike[str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        trace: bool | None = None,
        hello_timeout: float | None = 15.0,
    ) -> None:
        __tracebackhide__ = hide_mistake
        _check_options(executable=executable, env=env, delay_ms=delay_ms, dir=dir, cwd=cwd, trace=trace)
        if hello_timeout is not None and (
            isinstance(hello_timeout, bool) or not isinstance(hello_timeout, (int, float)) or not hello_timeout >= 0
        ):
            raise TypeError(
                f"FakeKoma: `hello_timeout` must be a number of seconds >= 0 or None, not {hello_timeout!r}"
            )
        text = check_scenario(scenario)
        # Looked up after the check: a mistake is told first.
        self.executable: str = os.fspath(executable) if executable is not None else sim.path()
        self._owned = dir is None
        if dir is None:
            self.dir = make_folder()
        else:
            self.dir = Path(dir)
            self.dir.mkdir(parents=True, exist_ok=True)
        self.scenario_path = self.dir / "scenario.json"
        self.record_path = self.dir / "requests.jsonl"
        self.home = self.dir / "home"
        self.home.mkdir(exist_ok=True)
        self.scenario_path.write_text(text, encoding="utf-8")
        self.record_path.unlink(missing_ok=True)  # a record of this fake's own requests
        (self.dir / "progress.json").unlink(missing_ok=True)  # and its own progress
        #: koma-sim's environment: KOMA_SIM_SCENARIO, KOMA_SIM_RECORD, KOMA_SIM_HOME,
        #: KOMA_SIM_PROGRESS (every koma-sim of the fake plays the scenario as
        #: one: a second one goes on where the others are), KOMA_SIM_DELAY_MS.
        self.env: dict[str, str] = {
            "KOMA_SIM_SCENARIO": str(self.scenario_path),
            "KOMA_SIM_RECORD": str(self.record_path),
            "KOMA_SIM_HOME": str(self.home),
            "KOMA_SIM_PROGRESS": str(self.dir / "progress.json"),
            "KOMA_SIM_DELAY_MS": str(delay_ms),
            **(env or {}),
        }
        options: ClientOptions = {"executable": self.executable, "env": dict(self.env), "hello_timeout": hello_timeout}
        if cwd is not None:
            options["cwd"] = cwd
        if trace is not None:
            options["trace"] = trace
        #: The options of a `Client(**koma.options)` of this fake.
        self.options: ClientOptions = options
        self._clients: list[Client] = []
        self._closed = False
        #: A client of this fake (nothing starts until its first call).
        self.client: Client = self.new_client()

    def new_client(self) -> Client:
        """Another client of the same scenario, record and home (a second
        process that resumes the session, say), whose koma-sim goes on with
        the scenario where the others are; closed with the fake."""
        if self._closed:
            raise RuntimeError("FakeKoma: closed")
        o = self.options
        client = Client(
            o["executable"],
            env=dict(self.env),
            cwd=o.get("cwd"),
            trace=o.get("trace", False),
            hello_timeout=o.get("hello_timeout", 15.0),
        )
        self._clients.append(client)
        return client

    # ---- what the program sent

    def requests(self) -> list[Request]:
        """Every request koma-sim read so far, in order (from every client of this fake)."""
        return read_record(self.record_path)

    def calls(self, method: str) -> list[Request]:
        """The requests of one method, in order."""
        return [r for r in self.requests() if r.method == method]

    def called(self, method: str) -> bool:
        """Whether the program sent this method at all."""
        return bool(self.calls(method))

    def methods(self) -> list[str | None]:
        """The methods sent, in order."""
        return [r.method for r in self.requests()]

    def approvals(self) -> list[tuple[str, Decision]]:
        """The answers to approvals, in order: `(approval, decision)`."""
        return [(r.params["approval"], r.params["decision"]) for r in self.calls("approve")]

    def texts(self) -> list[str]:
        """The texts of `submit`, `enqueue` and `interrupt_and_submit`, in order."""
        starts = ("submit", "enqueue", "interrupt_and_submit")
        return [r.params["text"] for r in self.requests() if r.method in starts]

    # ---- the end

    async def aclose(self) -> None:
        """Close every client (koma-sim is stopped and reaped), then remove
        the temporary folder. Idempotent."""
        self._closed = True
        try:
            for client in self._clients:
                await client.close()
        finally:
            self._remove()

    def stop(self) -> None:
        """Without an event loop (a test's teardown): stop the koma-sim of
        every client still open at once, and return once each is killed and
        reaped (and the client's threads are gone), then remove the
        temporary folder."""
        self._closed = True
        try:
            for client in self._clients:
                if not client._native.is_closed():
                    client._finalizer()  # killed, and no longer watched by a loop
            for client in self._clients:
                if not client._native.kill_and_wait(_STOP_LIMIT):
                    raise RuntimeError(
                        f"FakeKoma.stop(): koma-sim (pid {client.pid}) was not reaped within {_STOP_LIMIT} s"
                    )
        finally:
            self._clients.clear()
            self._remove()

    def _remove(self) -> None:
        if self._owned:
            shutil.rmtree(self.dir, ignore_errors=True)

    async def __aenter__(self) -> FakeKoma:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<koma_sdk.testing.FakeKoma {self.dir}>"
