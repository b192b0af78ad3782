"""A fake Koma for your program's tests: koma-sim plays a scenario (what
each turn does, and how requests are answered) as a real child through the
real transport, and records every request your program sent.

    from koma_sdk.testing import Approval, Branch, FakeKoma, Finish, Scenario, ScriptedTurn

    scenario = Scenario(turns=[ScriptedTurn([Approval("git_push", deny=Branch(steps=[Finish("failed")]))])])
    async with FakeKoma(scenario) as koma:
        await koma.client.create()
        result = await koma.client.run("deploy", on_approval="deny")
        assert koma.approvals() == [("a-1", "deny")]

The classes are koma-sim's scenario format (docs/koma-sim.md in the
repository, "Scenarios"), generated from its schema: koma-sim checks a scenario (`koma-sim
check-scenario`) before a fake starts, and its first mistake raises
`ScenarioError`, naming the turn and the field. Under pytest, the `fake_koma` fixture (registered by the
package) makes one and stops it when the test ends. docs/testing-python.md
in the repository is the guide.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from . import _scenario_types, sim
from ._client import Client
from ._fake_folder import make_folder
from ._options import ClientOptions, ClientSettings
from ._scenario import ABSENT, JSON, Part, ScenarioError, check, hide_mistake, to_json
from ._scenario_types import *  # noqa: F403 - the scenario's parts, generated from the schema
from ._surface import Decision

if TYPE_CHECKING:
    from types import TracebackType

    from typing_extensions import Unpack

__all__ = [
    "ABSENT",
    "JSON",
    "ClientOptions",
    "ClientSettings",
    "FakeKoma",
    "FakeKomaOptions",
    "Request",
    "ScenarioError",
    "check_scenario",
    "read_record",
]
__all__ += _scenario_types.__all__

# The parts are named where a program imports them from, as tracebacks and
# reprs of their classes say.
for _name in _scenario_types.__all__:
    _part = getattr(_scenario_types, _name)
    if isinstance(_part, type):
        _part.__module__ = __name__


def check_scenario(scenario: Part | Mapping[str, Any]) -> str:
    """Check a scenario (its parts, or koma-sim's file as a dict) as
    koma-sim checks its file: its JSON text, or `ScenarioError` naming the
    first mistake (`bad scenario: <entry>: <field>: <problem>`)."""
    __tracebackhide__ = hide_mistake
    return check(to_json(scenario))


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


class FakeKomaOptions(ClientSettings, total=False):
    """A fake's options beside its scenario (and `dir`), declared once: koma-sim's
    (`executable`, `env`, `delay_ms`) and its clients' (every option of
    `Client` but `executable` and `env`: `ClientSettings`, generated from the
    schema, telemetry's included). `fake_koma(scenario, **options)` takes the
    same; `@koma/sdk/testing`'s fake takes the same (its `client` holds the
    clients')."""

    executable: str | os.PathLike[str] | None
    env: Mapping[str, str] | None
    delay_ms: int


#: The names of a fake's options, and of those that go to its clients.
_FAKE_OPTIONS = FakeKomaOptions.__required_keys__ | FakeKomaOptions.__optional_keys__
_CLIENT_SETTINGS = ClientSettings.__required_keys__ | ClientSettings.__optional_keys__


def _passed(name: str, value: object) -> bool:
    """Whether a fake's option goes to its clients as given: a client's
    option, and None only where None means something (`hello_timeout=None`:
    no bound) or is the client's own default (a bool's None is "not given")."""
    return name in _CLIENT_SETTINGS and (value is not None or "None" in str(ClientSettings.__annotations__[name]))


def _check_options(options: Mapping[str, object]) -> None:
    """A fake's options, checked before anything is made (a TypeError
    naming the option, as `Client` checks its own). Its clients' options
    are checked by `Client` itself, before anything is made too."""
    __tracebackhide__ = hide_mistake
    for name in options:
        if name not in _FAKE_OPTIONS:
            known = ", ".join(sorted(_FAKE_OPTIONS))
            raise TypeError(f"FakeKoma: unexpected keyword argument {name!r} (the options are: {known}, and dir)")
    for name in ("executable", "cwd"):
        value = options.get(name)
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise TypeError(f"FakeKoma: `{name}` must be a path (a str or os.PathLike), not {value!r}")
    for name in ("trace", "telemetry", "capture_content"):
        value = options.get(name)
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"FakeKoma: `{name}` must be a bool, not {value!r}")
    env = options.get("env")
    if env is not None and not (
        isinstance(env, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
    ):
        raise TypeError(f"FakeKoma: `env` must be a mapping of str to str, not {env!r}")
    delay_ms = options.get("delay_ms", 0)
    if isinstance(delay_ms, bool) or not isinstance(delay_ms, int) or delay_ms < 0:
        raise TypeError(f"FakeKoma: `delay_ms` must be an int of milliseconds >= 0, not {delay_ms!r}")
    hello_timeout = options.get("hello_timeout")
    if hello_timeout is not None and (
        isinstance(hello_timeout, bool) or not isinstance(hello_timeout, (int, float)) or not hello_timeout >= 0
    ):
        raise TypeError(f"FakeKoma: `hello_timeout` must be a number of seconds >= 0 or None, not {hello_timeout!r}")
    for name, getter in (("tracer_provider", "get_tracer"), ("meter_provider", "get_meter")):
        value = options.get(name)
        if value is not None and not callable(getattr(value, getter, None)):
            raise TypeError(f"FakeKoma: `{name}` must be an OpenTelemetry provider (with {getter}()), not {value!r}")


class FakeKoma:
    """koma-sim playing a scenario. Making one checks the scenario (a
    `ScenarioError` before anything starts), writes it into a folder (a new
    temporary one unless `dir` is given) beside a session home and the
    record of requests, and makes `client`; nothing starts until the
    client's first call. `aclose()` (and `async with`) closes every client
    it made and removes the temporary folder.

    `executable` is koma-sim (`koma_sdk.sim.path()` unless given), `env`
    more of its environment (`KOMA_SIM_FAULT`, ...), `delay_ms` its
    `KOMA_SIM_DELAY_MS` (scripted steps are not paced by it), and the rest
    (`cwd`, `trace`, `hello_timeout`, `telemetry`, `tracer_provider`,
    `meter_provider`, `capture_content`) its clients' options: see
    `FakeKomaOptions`."""

    def __init__(
        self,
        scenario: Part | Mapping[str, Any],
        *,
        dir: str | os.PathLike[str] | None = None,
        **options: Unpack[FakeKomaOptions],
    ) -> None:
        __tracebackhide__ = hide_mistake
        _check_options(options)
        if dir is not None and not isinstance(dir, (str, os.PathLike)):
            raise TypeError(f"FakeKoma: `dir` must be a path (a str or os.PathLike), not {dir!r}")
        executable = options.get("executable")
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
            "KOMA_SIM_DELAY_MS": str(options.get("delay_ms", 0)),
            **(options.get("env") or {}),
        }
        #: The options of its clients beside `executable` and `env`, as given.
        self.settings: ClientSettings = cast(ClientSettings, {k: v for k, v in options.items() if _passed(k, v)})
        #: The options of a `Client(**koma.options)` of this fake.
        self.options: ClientOptions = {"executable": self.executable, "env": dict(self.env), **self.settings}
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
        client = Client(self.executable, env=dict(self.env), **self.settings)
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
