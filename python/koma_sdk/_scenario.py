"""A koma-sim scenario built in code, and its check before a fake starts.

The parts of a scenario are the dataclasses of `_scenario_types` (generated
from schema/scenario.schema.json); `Part` is what they share: `json()`, their
object in koma-sim's file, made from each class's table of members.

koma-sim is the format's one reader: the scenario goes to `koma-sim
check-scenario`, which reads it as it reads its file and says its first
mistake (the entry: a turn by its index and its match, or a method entry by
its index, method and call; the field's path from it; the problem). So the
check's words are koma-sim's, `bad scenario: <entry>: <field>: <problem>`,
and a regular expression is compiled by the regex crate koma-sim uses.
`@koma/sdk/testing` (lib/scenario.js) does the same in JavaScript."""

from __future__ import annotations

import enum
import json
import math
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal, Union

from . import sim

#: Any JSON value (`input`, `output`, `data`, `result`).
JSON = Union[None, bool, int, float, str, Sequence["JSON"], Mapping[str, "JSON"]]  # noqa: UP007 - a recursive alias


class Absent(enum.Enum):
    ABSENT = "ABSENT"

    def __repr__(self) -> str:
        return "ABSENT"


#: A field left out (where `None` would be JSON's null).
ABSENT = Absent.ABSENT

#: A part's members: (attribute, name in the file, how it is left out: never
#: (`required`), when None (`optional`), when ABSENT (`any`), when empty (`list`)).
Members = tuple[tuple[str, str, Literal["required", "optional", "any", "list"]], ...]
#: A step's tag: the member that says which step it is, and its value (`("do", "tool")`).
Tag = tuple[str, str]


class Part:
    """A piece of a scenario: `json()` is its object in koma-sim's file."""

    _tag: ClassVar[Tag | None] = None
    _members: ClassVar[Members] = ()

    def json(self) -> Any:
        out: dict[str, Any] = {}
        if self._tag is not None:
            out[self._tag[0]] = self._tag[1]
        for attribute, name, mode in self._members:
            v = getattr(self, attribute)
            left_out = {"required": False, "optional": v is None, "any": v is ABSENT, "list": not v}[mode]
            if not left_out:
                out[name] = to_json(v)
        return out


def to_json(v: Any, _open: frozenset[int] = frozenset()) -> Any:
    """A value of the format as JSON: the parts by their `json()`, the rest
    as it is (what JSON cannot hold is left for the check to name; a cycle,
    where it comes back)."""
    if isinstance(v, Part):
        return v.json()
    if isinstance(v, (Mapping, list, tuple)):
        if id(v) in _open:
            return Cycle()
        inner = _open | {id(v)}
        if isinstance(v, Mapping):
            return {k: to_json(x, inner) for k, x in v.items()}
        return [to_json(x, inner) for x in v]
    return v


#: The longest koma-sim takes to check a scenario, in seconds: it reads,
#: checks and exits; a bound, so that nothing waits forever.
_CHECK_TIMEOUT = 60.0


class ScenarioError(ValueError):
    """A scenario with a mistake, found before koma-sim starts. `entry` is
    the turn or method entry (`turns[0] (contains "deploy")`, `methods[1]
    (submit, call 2)`; empty for a field of the scenario itself), `field`
    the path from it (`steps[1].do`), `problem` what is wrong."""

    # Named where users import it from, in tracebacks and reprs.
    __module__ = "koma_sdk.testing"

    def __init__(self, entry: str, field: str, problem: str) -> None:
        where = ": ".join(p for p in (entry, field) if p)
        super().__init__(f"bad scenario: {where + ': ' if where else ''}{problem}")
        self.entry = entry
        self.field = field
        self.problem = problem


ScenarioError.__module__ = "koma_sdk.testing"  # where a program imports it from, as tracebacks name it


class Cycle:
    """Where a value comes back inside itself (`to_json` puts one there)."""


def _host_only(v: Any) -> str | None:
    """What a value is, if JSON cannot hold it (None if it can)."""
    if v is None or isinstance(v, (str, bool, int)):
        return None
    if isinstance(v, Cycle):
        return "a cycle: this value contains itself"
    if isinstance(v, float):
        return None if math.isfinite(v) else f"{v}, which JSON cannot hold"
    if isinstance(v, type):
        if issubclass(v, Part):
            return f"{v.__name__} is a class, not a value: make one, as `{v.__name__}(...)`"
        return f"the class {v.__qualname__}, which JSON cannot hold"
    if isinstance(v, (set, frozenset)):
        return "a set, which JSON cannot hold: give a list"
    if isinstance(v, (bytes, bytearray)):
        return "bytes, which JSON cannot hold: give a str"
    if isinstance(v, enum.Enum):
        return f"{v!r}, which JSON cannot hold"
    if callable(v):
        name = getattr(v, "__qualname__", None) or type(v).__name__
        return f"a function ({name}), which JSON cannot hold"
    return f"an object of type {type(v).__qualname__}, which JSON cannot hold"


def _plain(scenario: Any) -> tuple[Any, tuple[str, str] | None]:
    """The scenario as the JSON koma-sim reads, and the first value in it
    that JSON cannot hold (a set, bytes, a class left unmade, a function, a
    dict key that is not a string, NaN, a cycle): its place as a JSON
    pointer, and what it is. Such a value becomes None, so that koma-sim can
    name its entry and field."""
    mistake: tuple[str, str] | None = None
    open_: set[int] = set()

    def walk(v: Any, at: str) -> Any:
        nonlocal mistake
        if isinstance(v, (dict, list, tuple)):
            if id(v) in open_:
                mistake = mistake or (at, "a cycle: this value contains itself")
                return None
            open_.add(id(v))
            try:
                if isinstance(v, dict):
                    bad = next((k for k in v if not isinstance(k, str)), _NONE)
                    if bad is not _NONE:
                        mistake = mistake or (at, f"a key that is not a string ({bad!r}): JSON's keys are strings")
                        return None
                    return {k: walk(x, f"{at}/{k.replace('~', '~0').replace('/', '~1')}") for k, x in v.items()}
                return [walk(x, f"{at}/{i}") for i, x in enumerate(v)]
            finally:
                open_.discard(id(v))
        problem = _host_only(v)
        if problem is not None:
            mistake = mistake or (at, problem)
            return None
        return v

    return walk(scenario, ""), mistake


_NONE = object()


def hide_mistake(info: Any) -> bool:
    """pytest's `__tracebackhide__` for the frames of the package between a
    test and the mistake in its scenario or options: hidden for those
    (`ScenarioError`, `TypeError`, `ValueError`), shown for anything else."""
    return bool(info.errisinstance((ScenarioError, TypeError, ValueError)))


def check(scenario: Any) -> str:
    """Check a scenario (JSON values: dicts, lists, strings, numbers, bools,
    None) as koma-sim checks its file, with the package's koma-sim (whatever
    a fake then runs: the format is its); its JSON text, or a ScenarioError
    naming its first mistake. A value JSON cannot hold is a mistake too,
    whose entry and field koma-sim names (`check-scenario --mistake`)."""
    __tracebackhide__ = hide_mistake
    plain, mistake = _plain(scenario)
    if mistake is not None and mistake[0] == "":
        raise ScenarioError("", "", f"not JSON: {mistake[1]}")
    text = json.dumps(plain, indent=2, allow_nan=False, ensure_ascii=False)
    exe = sim.path()
    args = [exe, "check-scenario"] + (["--mistake", *mistake] if mistake is not None else [])
    r = subprocess.run(
        args,
        input=text.encode(),
        capture_output=True,
        env={},
        timeout=_CHECK_TIMEOUT,
        check=False,
    )
    if r.returncode == 0 and mistake is None:
        return text + "\n"
    if r.returncode == 64:
        try:
            said = json.loads(r.stdout)
        except ValueError:
            said = None
        if isinstance(said, dict):
            entry, field, problem = (said.get(k) for k in ("entry", "field", "problem"))
            if isinstance(entry, str) and isinstance(field, str) and isinstance(problem, str):
                raise ScenarioError(entry, field, problem)
    raise RuntimeError(
        f"koma-sim check-scenario ({exe}) could not check the scenario (exit {r.returncode}): "
        + r.stderr.decode(errors="replace").strip()
    )
