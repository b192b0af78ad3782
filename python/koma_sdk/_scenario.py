"""The check of a koma-sim scenario before koma-sim starts: the scenario is
read as koma-sim reads its file (the same fields, defaults and order of
checks: crates/koma-sim/src/scenario/parse.rs), and its first mistake is one
line in koma-sim's words, `bad scenario: <entry>: <field>: <problem>`, where
the entry is a turn by its index and its match, or a method entry by its
index, method and call. `@koma/sdk/testing` (lib/scenario.js) says the same
in JavaScript. A regular expression is compiled with Python's `re`, which
reads most of Rust's syntax; what only Rust reads is put in Python's words
first, and look-around and backreferences, which Python has and Rust has
not, are refused."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

Fields = Sequence[tuple[str, bool]]

TOP: Fields = [
    ("$schema", False),
    ("format", False),
    ("about", False),
    ("unscripted", False),
    ("turns", False),
    ("methods", False),
]
TURN: Fields = [("about", False), ("match", False), ("times", False), ("steps", True)]
MATCHERS = ["turn", "text", "contains", "regex"]
BRANCH: Fields = [("output", False), ("error", False), ("steps", False)]
METHOD: Fields = [
    ("about", False),
    ("method", True),
    ("nth", False),
    ("result", False),
    ("error", False),
    ("delay_ms", False),
]
ERROR: Fields = [("code", True), ("message", False), ("data", False)]
#: Every step, with its fields besides `do`.
STEPS: Sequence[tuple[str, Fields]] = [
    ("output", [("text", True)]),
    ("tool", [("tool", True), ("input", False), ("output", True), ("error", False)]),
    ("approval", [("tool", True), ("input", False), ("allow", False), ("deny", False)]),
    ("pause", [("ms", False)]),
    ("event", [("name", True), ("data", False)]),
    ("finish", [("status", False), ("error", False)]),
    ("exit", [("code", True)]),
    ("crash", [("signal", True)]),
    ("stop_answering", []),
    ("broken_frame", [("line", False)]),
]
#: The signals a `crash` step may die of.
SIGNALS = [
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


class ScenarioError(ValueError):
    """A scenario with a mistake, found before koma-sim starts. `entry` is
    the turn or method entry (`turns[0] (contains "deploy")`, `methods[1]
    (submit, call 2)`; empty for a field of the scenario itself), `field`
    the path from it (`steps[1].do`), `problem` what is wrong."""

    def __init__(self, entry: str, field: str, problem: str) -> None:
        where = ": ".join(p for p in (entry, field) if p)
        super().__init__(f"bad scenario: {where + ': ' if where else ''}{problem}")
        self.entry = entry
        self.field = field
        self.problem = problem


class _Mistake(Exception):
    def __init__(self, field: str, problem: str) -> None:
        super().__init__(field, problem)
        self.field = field
        self.problem = problem


def _fail(field: str, problem: str) -> NoReturn:
    raise _Mistake(field, problem)


def _quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _not(v: Any) -> str:
    """What a value that does not fit is, for a message."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    return "an object"


def _is_uint(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _join(at: str, k: str) -> str:
    return f"{at}.{k}" if at else k


class _Obj:
    """An object of the format, checked for unknown and missing fields."""

    def __init__(self, v: Any, at: str, what: str, fields: Fields) -> None:
        if not isinstance(v, dict):
            _fail(at, f"must be an object ({what}), not {_not(v)}")
        self.map: dict[str, Any] = v
        self.at = at
        names = ", ".join(f[0] for f in fields)
        known = {f[0] for f in fields}
        # koma-sim reads objects with their keys in sorted order.
        for k in sorted(v):
            if k not in known:
                _fail(self.path(k), f"unknown field ({what} has: {names})")
        for k, required in fields:
            if required and k not in v:
                _fail(self.path(k), f"missing ({what} needs `{k}`)")

    def path(self, k: str) -> str:
        return _join(self.at, k)

    def has(self, k: str) -> bool:
        return k in self.map

    def get(self, k: str) -> Any:
        return self.map.get(k)

    def typed(self, k: str, want: str, ok: Any) -> Any:
        if k not in self.map:
            return None
        v = self.map[k]
        if not ok(v):
            _fail(self.path(k), f"must be {want}, not {_not(v)}")
        return v

    def string(self, k: str) -> str | None:
        value: str | None = self.typed(k, "a string", lambda v: isinstance(v, str))
        return value

    def uint(self, k: str) -> int | None:
        value: int | None = self.typed(k, "a non-negative integer", _is_uint)
        return value

    def boolean(self, k: str) -> bool | None:
        value: bool | None = self.typed(k, "a boolean", lambda v: isinstance(v, bool))
        return value

    def array(self, k: str) -> list[Any] | None:
        value: list[Any] | None = self.typed(k, "an array", lambda v: isinstance(v, list))
        return value


def _describe_turn(v: Any) -> str:
    """` (contains "fix")`: how a turn is named in a message, from its `match` as written."""
    if not isinstance(v, dict):
        return ""
    if "match" not in v:
        return " (any text)"
    m = v["match"]
    if not isinstance(m, dict) or len(m) != 1:
        return ""
    ((k, value),) = m.items()
    if k == "turn" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f" (turn {value!r})"
    if k in MATCHERS and isinstance(value, str):
        return f" ({k} {_quote(value)})"
    return ""


def _describe_method(v: Any) -> str:
    """` (submit, call 2)`: how a method entry is named in a message."""
    if not isinstance(v, dict) or not isinstance(v.get("method"), str):
        return ""
    if "nth" not in v:
        return f" ({v['method']}, every call)"
    n = v["nth"]
    if isinstance(n, (int, float)) and not isinstance(n, bool):
        return f" ({v['method']}, call {n!r})"
    return ""


def check(scenario: Any) -> str:
    """Check a scenario (JSON values: dicts, lists, strings, numbers, bools,
    None) as koma-sim checks its file; its JSON text, or a ScenarioError
    naming its first mistake."""
    try:
        text = json.dumps(scenario, indent=2, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise ScenarioError("", "", f"not JSON: {e}") from None
    v = json.loads(text)

    def within(entry: str, body: Any, *args: Any) -> None:
        try:
            body(*args)
        except _Mistake as e:
            raise ScenarioError(entry, e.field, e.problem) from None

    within("", _check_top, v)
    for i, t in enumerate(v.get("turns") or []):
        within(f"turns[{i}]{_describe_turn(t)}", _check_turn, t)
    for i, m in enumerate(v.get("methods") or []):
        within(f"methods[{i}]{_describe_method(m)}", _check_method, m)
    return text + "\n"


def _check_top(v: Any) -> None:
    top = _Obj(v, "", "the scenario", TOP)
    fmt = top.uint("format")
    if fmt is not None and fmt != 1:
        _fail("format", f"must be 1 (the only format there is), not {fmt}")
    top.string("about")
    top.string("$schema")
    unscripted = top.string("unscripted")
    if unscripted is not None and unscripted not in ("error", "agent"):
        _fail("unscripted", f'must be "agent" or "error", not {_quote(unscripted)}')
    top.array("turns")
    top.array("methods")


def _check_turn(v: Any) -> None:
    o = _Obj(v, "", "a turn", TURN)
    o.string("about")
    if o.has("match"):
        _check_match(o.get("match"))
    if o.has("times"):
        t = o.get("times")
        if t != "always" and not (_is_uint(t) and t > 0):
            _fail("times", f'must be a positive integer or "always", not {_not(t)}')
    _check_steps(o.get("steps"), "steps")


def _check_match(v: Any) -> None:
    if not isinstance(v, dict):
        _fail("match", f"must be an object, not {_not(v)}")
    keys = sorted(v)
    for k in keys:
        if k not in MATCHERS:
            _fail(f"match.{k}", f"unknown matcher (a match has one of: {', '.join(MATCHERS)})")
    if not keys:
        _fail("match", f"has no matcher (give one of: {', '.join(MATCHERS)})")
    if len(keys) > 1:
        _fail("match", f"has {len(keys)} matchers ({', '.join(keys)}); give one")
    k = keys[0]
    value = v[k]
    if k == "turn":
        if not (_is_uint(value) and value > 0):
            _fail("match.turn", f"must be a positive integer (1 is the first turn), not {_not(value)}")
        return
    if not isinstance(value, str):
        _fail(f"match.{k}", f"must be a string, not {_not(value)}")
    if k == "regex":
        problem = regex_problem(value)
        if problem:
            _fail("match.regex", f"not a valid regular expression: {problem}")


def _check_steps(v: Any, at: str) -> None:
    if not isinstance(v, list):
        _fail(at, f"must be an array of steps, not {_not(v)}")
    finished = False
    for i, s in enumerate(v):
        here = f"{at}[{i}]"
        if finished:
            _fail(here, "comes after a `finish` step, which ends the turn")
        finished = _check_step(s, here) == "finish"


def _check_step(v: Any, at: str) -> str:
    if not isinstance(v, dict):
        _fail(at, f"must be an object (a step), not {_not(v)}")
    kinds = ", ".join(s[0] for s in STEPS)
    if "do" not in v:
        _fail(f"{at}.do", f"missing (every step has `do`, one of: {kinds})")
    kind = v["do"]
    if not isinstance(kind, str):
        _fail(f"{at}.do", f"must be a string, not {_not(kind)}")
    found = next((s for s in STEPS if s[0] == kind), None)
    if found is None:
        _fail(f"{at}.do", f"unknown step {_quote(kind)} (the steps are: {kinds})")
    name, fields = found
    o = _Obj(v, at, f"the step `{name}`", [("do", True), *fields])
    if name == "output":
        o.string("text")
    elif name == "tool":
        o.string("tool")
        o.boolean("error")
    elif name == "approval":
        o.string("tool")
        _check_branch(o, "allow")
        _check_branch(o, "deny")
    elif name == "pause":
        o.uint("ms")
    elif name == "event":
        if o.string("name") == "":
            _fail(o.path("name"), "must not be empty")
    elif name == "finish":
        o.string("status")
        o.string("error")
    elif name == "exit":
        code = o.get("code")
        if not (_is_uint(code) and code <= 255):
            _fail(o.path("code"), f"must be an exit code, 0 to 255, not {_not(code)}")
    elif name == "crash":
        signal = o.string("signal")
        if signal is not None and signal not in SIGNALS:
            _fail(o.path("signal"), f"unknown signal {_quote(signal)} (the signals are: {', '.join(SIGNALS)})")
    elif name == "broken_frame":
        line = o.string("line")
        if line is not None and ("\n" in line or "\r" in line):
            _fail(o.path("line"), "must be one line (no line break)")
    return name


def _check_branch(step: _Obj, k: str) -> None:
    if not step.has(k):
        return
    o = _Obj(step.get(k), step.path(k), "an approval's branch", BRANCH)
    if o.has("steps"):
        _check_steps(o.get("steps"), o.path("steps"))
    o.boolean("error")


def _check_method(v: Any) -> None:
    o = _Obj(v, "", "a method entry", METHOD)
    o.string("about")
    if o.string("method") == "":
        _fail("method", "must not be empty")
    if o.has("nth"):
        n = o.get("nth")
        if not (_is_uint(n) and n > 0):
            _fail("nth", f"must be a positive integer (1 is the first call), not {_not(n)}")
    delay = o.uint("delay_ms")
    if o.has("result") and o.has("error"):
        _fail("", "has both `result` and `error`; give one")
    if o.has("error"):
        e = _Obj(o.get("error"), "error", "an error", ERROR)
        if e.string("code") == "":
            _fail("error.code", "must not be empty")
        e.string("message")
    elif not o.has("result") and delay is None:
        _fail("", "scripts nothing: give `result`, `error` or `delay_ms`")


# ---------------------------------------------------------------- regular expressions

RUST_ONLY = "koma-sim compiles it with Rust's regex crate, whose syntax differs from Python's in places"
_FLAGS = re.compile(r"\(\?([a-zA-Z-]+)(\)|:)")


def regex_problem(source: str) -> str | None:
    """What is wrong with a pattern for koma-sim, as far as Python's `re`
    can tell; None when nothing is. Rust's spellings that `re` lacks are put
    in its words first: inline flags Python has not (`U`, `R`) or that are
    not at the start, `(?<name>...)`, `\\z`, and Unicode classes (`\\pL`,
    `\\p{Greek}`). Look-around and backreferences, which only Python has,
    are refused."""
    in_class = False
    i = 0
    while i < len(source):
        c = source[i]
        if c == "\\":
            nxt = source[i + 1 : i + 2]
            if not in_class and (nxt in "123456789" and nxt != ""):
                return f"a backreference (\\{nxt}) at offset {i}: {RUST_ONLY} (it has no backreferences)"
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            i += 1
            continue
        if c == "[":
            in_class = True
            if source[i + 1 : i + 2] == "^":
                i += 1
            if source[i + 1 : i + 2] == "]":
                i += 1
            i += 1
            continue
        if c == "(" and source[i + 1 : i + 2] == "?":
            rest = source[i + 2 : i + 4]
            if rest[:1] in ("=", "!") or rest in ("<=", "<!"):
                return f"a look-around group at offset {i}: {RUST_ONLY} (it has no look-around)"
            if source[i + 2 : i + 4] == "P=":
                return f"a backreference ((?P=...)) at offset {i}: {RUST_ONLY} (it has no backreferences)"
        i += 1

    def flags(m: re.Match[str]) -> str:
        kept = "".join(f for f in m.group(1) if f in "imsx-")
        at_start = m.start() == 0 and m.group(2) == ")"
        if m.group(2) == ":":
            return f"(?{kept}:" if kept.strip("-") and not kept.endswith("-") else "(?:"
        return f"(?{kept.replace('-', '')})" if at_start and kept.replace("-", "") else ""

    py = _FLAGS.sub(flags, source)
    py = re.sub(r"\(\?<(?=[A-Za-z_])", "(?P<", py)
    py = py.replace("\\z", "\\Z")
    py = re.sub(r"\\[pP](\{[^}]*\}|[A-Za-z])", ".", py)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # `[[:alpha:]]`: a nested set to come
            re.compile(py)
    except re.error as e:
        return f"{e} (checked with Python's re; {RUST_ONLY})"
    return None
