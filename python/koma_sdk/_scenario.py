"""The check of a koma-sim scenario before a fake starts. koma-sim is the
format's one reader: the scenario goes to `koma-sim check-scenario`, which
reads it as it reads its file and says its first mistake (the entry: a turn
by its index and its match, or a method entry by its index, method and
call; the field's path from it; the problem). So the check's words are
koma-sim's, `bad scenario: <entry>: <field>: <problem>`, and a regular
expression is compiled by the regex crate koma-sim uses. `@koma/sdk/testing`
(lib/scenario.js) does the same in JavaScript."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from . import sim

#: The longest koma-sim takes to check a scenario, in seconds: it reads,
#: checks and exits; a bound, so that nothing waits forever.
_CHECK_TIMEOUT = 60.0


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


ScenarioError.__module__ = "koma_sdk.testing"  # where a program imports it from, as tracebacks name it


def check(scenario: Any) -> str:
    """Check a scenario (JSON values: dicts, lists, strings, numbers, bools,
    None) as koma-sim checks its file, with the package's koma-sim (whatever
    a fake then runs: the format is its); its JSON text, or a ScenarioError
    naming its first mistake."""
    __tracebackhide__ = True  # pytest shows the mistake where the test made the fake
    try:
        text = json.dumps(scenario, indent=2, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise ScenarioError("", "", f"not JSON: {e}") from None
    exe = sim.path()
    r = subprocess.run(
        [exe, "check-scenario"],
        input=text.encode(),
        capture_output=True,
        env={},
        timeout=_CHECK_TIMEOUT,
        check=False,
    )
    if r.returncode == 0:
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
