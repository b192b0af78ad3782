"""koma_sdk.testing: scenarios built in code, checked before koma-sim starts
(the same first mistake, in the same words, as koma-sim finds in the file),
and played by a real koma-sim child under asyncio and trio: one test for
each feature of the format, the record of requests, the pytest fixture, and
the docs' example as written."""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import koma_sdk.sim
from helpers import HANG, ROOT, SIM, alive, child_pids, linux_proc, raises
from koma_sdk import Client, KomaError
from koma_sdk._scenario import to_json as as_json
from koma_sdk.pytest_plugin import FakeKomaFactory
from koma_sdk.testing import (
    ABSENT,
    Approval,
    Branch,
    BrokenFrame,
    ClientSettings,
    Contains,
    Crash,
    Event,
    Exit,
    FakeKoma,
    FakeKomaOptions,
    Finish,
    MethodAnswer,
    Output,
    Pause,
    Regex,
    Scenario,
    ScenarioError,
    ScriptedError,
    ScriptedTurn,
    StopAnswering,
    Text,
    Tool,
    TurnNumber,
    check_scenario,
    read_record,
)

pytestmark = pytest.mark.anyio


def names(items: list[Any]) -> list[str]:
    return [i.name if i.type == "event" else i.type for i in items]


async def loop(turn: Any) -> list[Any]:
    items = []
    with anyio.fail_after(HANG):
        async for item in turn:
            items.append(item)
    return items


# ---------------------------------------------------------------- the classes


def test_the_classes_make_the_objects_of_the_files_format() -> None:
    def js(part: Any) -> Any:
        return json.loads(check_scenario(Scenario(turns=[ScriptedTurn([part])])))["turns"][0]["steps"][0]

    assert js(Output("hi")) == {"do": "output", "text": "hi"}
    assert js(Tool("run", "ok")) == {"do": "tool", "tool": "run", "output": "ok"}
    assert js(Tool("run", None, input={"a": 1}, error=True)) == {
        "do": "tool",
        "tool": "run",
        "input": {"a": 1},
        "output": None,
        "error": True,
    }
    assert js(Approval("push", deny=Branch(output=None))) == {
        "do": "approval",
        "tool": "push",
        "deny": {"output": None},
    }
    assert js(Pause()) == {"do": "pause"}
    assert js(Pause(5)) == {"do": "pause", "ms": 5}
    assert js(Event("x")) == {"do": "event", "name": "x"}
    assert js(Event("x", None)) == {"do": "event", "name": "x", "data": None}
    assert js(Finish()) == {"do": "finish"}
    assert js(Finish("failed", "why")) == {"do": "finish", "status": "failed", "error": "why"}
    assert js(Exit(3)) == {"do": "exit", "code": 3}
    assert js(Crash()) == {"do": "crash", "signal": "SIGKILL"}
    assert js(StopAnswering()) == {"do": "stop_answering"}
    assert js(BrokenFrame()) == {"do": "broken_frame"}
    assert repr(ABSENT) == "ABSENT"
    whole = Scenario(
        turns=[ScriptedTurn([Output("a")], match=Regex("^a"), times="always"), {"steps": []}],
        methods=[MethodAnswer("submit", nth=2, error=ScriptedError("busy")), MethodAnswer("state", result=None)],
        unscripted="agent",
        about="everything",
    )
    assert json.loads(check_scenario(whole)) == {
        "about": "everything",
        "unscripted": "agent",
        "turns": [
            {"match": {"regex": "^a"}, "times": "always", "steps": [{"do": "output", "text": "a"}]},
            {"steps": []},
        ],
        "methods": [{"method": "submit", "nth": 2, "error": {"code": "busy"}}, {"method": "state", "result": None}],
    }
    # A dict is koma-sim's file as it is.
    assert json.loads(check_scenario({"turns": [{"steps": [{"do": "pause"}]}]})) == {
        "turns": [{"steps": [{"do": "pause"}]}]
    }


# ---------------------------------------------------------------- mistakes


def sim_says(tmp_path: Path, scenario: Any) -> str:
    """The line koma-sim writes for `scenario` as a file: `bad scenario <file>: X` -> X."""
    file = tmp_path / "s.json"
    file.write_text(json.dumps(scenario))
    env = {**os.environ, "KOMA_SIM_SCENARIO": str(file), "KOMA_SIM_HOME": str(tmp_path)}
    r = subprocess.run([SIM, "sdk", "serve"], env=env, input="", capture_output=True, text=True, timeout=HANG)
    assert r.returncode == 64, r.stderr
    assert r.stdout == "", "nothing on stdout: no hello"
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    prefix = f"koma-sim: bad scenario {file}: "
    assert lines[0].startswith(prefix), lines[0]
    return lines[0][len(prefix) :]


def builder_says(scenario: Any) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        check_scenario(scenario)
    return info.value


DEPLOY = {"contains": "deploy"}
# Each kind of mistake: the scenario, and the entry and field its message names.
MISTAKES = [
    (
        "an unknown step",
        {"turns": [{"match": DEPLOY, "steps": [{"do": "output", "text": "a"}, {"do": "explode"}]}]},
        'turns[0] (contains "deploy")',
        "steps[1].do",
    ),
    (
        "a missing field",
        {"turns": [{"steps": []}, {"match": {"turn": 2}, "steps": [{"do": "exit"}]}]},
        "turns[1] (turn 2)",
        "steps[0].code",
    ),
    ("a step without do", {"turns": [{"steps": [{"text": "hi"}]}]}, "turns[0] (any text)", "steps[0].do"),
    (
        "an unknown field",
        {"turns": [{"match": {"text": "hi"}, "steps": [{"do": "output", "text": "a", "colour": "red"}]}]},
        'turns[0] (text "hi")',
        "steps[0].colour",
    ),
    ("a wrong type", Scenario(turns=[ScriptedTurn([Output(42)])], about=None), "turns[0] (any text)", "steps[0].text"),  # type: ignore[arg-type]
    (
        "null where a string goes",
        {"turns": [{"steps": [{"do": "finish", "status": None}]}]},
        "turns[0] (any text)",
        "steps[0].status",
    ),
    (
        "an unknown signal",
        Scenario(turns=[ScriptedTurn([Approval("x", deny=Branch(steps=[Crash("SIGFOO")]))])]),
        "turns[0] (any text)",
        "steps[0].deny.steps[0].signal",
    ),  # type: ignore[arg-type]
    (
        "a step after finish",
        Scenario(turns=[ScriptedTurn([Finish(), Output("late")])]),
        "turns[0] (any text)",
        "steps[1]",
    ),
    ("two matchers", {"turns": [{"match": {"text": "a", "contains": "b"}, "steps": []}]}, "turns[0]", "match"),
    ("an unknown matcher", {"turns": [{"match": {"starts": "a"}, "steps": []}]}, "turns[0]", "match.starts"),
    ("times of zero", Scenario(turns=[ScriptedTurn([], times=0)]), "turns[0] (any text)", "times"),
    ("an exit code out of range", Scenario(turns=[ScriptedTurn([Exit(256)])]), "turns[0] (any text)", "steps[0].code"),
    (
        "a broken line of two",
        Scenario(turns=[ScriptedTurn([BrokenFrame("a\nb")])]),
        "turns[0] (any text)",
        "steps[0].line",
    ),
    ("an empty event name", Scenario(turns=[ScriptedTurn([Event("")])]), "turns[0] (any text)", "steps[0].name"),
    (
        "a method error without code",
        {"methods": [{"method": "submit", "nth": 2, "error": {}}]},
        "methods[0] (submit, call 2)",
        "error.code",
    ),
    (
        "a method entry that scripts nothing",
        Scenario(methods=[MethodAnswer("state")]),
        "methods[0] (state, every call)",
        "",
    ),
    (
        "both result and error",
        Scenario(methods=[MethodAnswer("state", result={}, error=ScriptedError("x"))]),
        "methods[0] (state, every call)",
        "",
    ),
    ("nth of zero", Scenario(methods=[MethodAnswer("state", nth=0, result={})]), "methods[0] (state, call 0)", "nth"),
    (
        "a method the protocol does not have",
        Scenario(methods=[MethodAnswer("sumbit", result={})]),
        "methods[0] (sumbit, every call)",
        "method",
    ),
    ("a bad unscripted", {"unscripted": "keyword"}, "", "unscripted"),
    ("a bad format", {"format": 2}, "", "format"),
    ("a field outside the format", {"turn": []}, "", "turn"),
    ("steps that are not a list", {"turns": [{"steps": {}}]}, "turns[0] (any text)", "steps"),
    (
        "a float where an integer goes",
        {"turns": [{"steps": [{"do": "pause", "ms": 1.5}]}]},
        "turns[0] (any text)",
        "steps[0].ms",
    ),
]


@pytest.mark.parametrize(("scenario", "entry", "field"), [pytest.param(s, e, f, id=w) for w, s, e, f in MISTAKES])
def test_a_mistake_is_refused_by_the_builder_naming_entry_and_field_as_koma_sim_does(
    tmp_path: Path, scenario: Any, entry: str, field: str
) -> None:
    e = builder_says(scenario)
    assert (e.entry, e.field) == (entry, field), str(e)
    assert str(e).startswith(f"bad scenario: {': '.join(p for p in (entry, field) if p)}"), str(e)
    assert isinstance(e, ValueError)
    # koma-sim finds the same first mistake in the file, in the same words.
    assert f"bad scenario: {sim_says(tmp_path, as_json(scenario))}" == str(e)


def test_a_bad_regular_expression_is_refused_by_the_builder_and_by_koma_sim(tmp_path: Path) -> None:
    scenario = {"turns": [{"match": {"regex": "fix (.*"}, "steps": []}]}
    e = builder_says(scenario)
    assert (e.entry, e.field) == ('turns[0] (regex "fix (.*")', "match.regex")
    assert e.problem == "not a valid regular expression: unclosed group"
    said = sim_says(tmp_path, scenario)
    assert said == 'turns[0] (regex "fix (.*"): match.regex: not a valid regular expression: unclosed group'


def test_look_around_and_backreferences_are_refused_and_rusts_own_spellings_taken(tmp_path: Path) -> None:
    for pattern, said in [
        (r"^fix(?=\.rs)", "look-around"),
        (r"(?<!un)safe", "look-around"),
        (r"(a)\1", "backreference"),
        (r"(?P<x>a)(?P=x)", "unrecognized flag"),
    ]:
        e = builder_says(Scenario(turns=[ScriptedTurn([], match=Regex(pattern))]))
        assert e.field == "match.regex"
        assert said in e.problem
        scenario = {"turns": [{"match": {"regex": pattern}, "steps": []}]}
        assert f"bad scenario: {sim_says(tmp_path, scenario)}" == str(e)
    for pattern in [
        r"(?i)^fix",
        r"(?P<file>\w+)\.rs\z",
        r"\Adeploy (?i:now)$",
        r"[[:alpha:]]+",
        r"[(?=]x",
        r"\p{Greek}+",
        r"(?<name>x)",
        "a(?U)b*",
    ]:
        check_scenario(Scenario(turns=[ScriptedTurn([], match=Regex(pattern))]))


def test_a_scenario_that_is_not_json_is_refused() -> None:
    assert str(builder_says({1, 2})) == "bad scenario: not JSON: a set, which JSON cannot hold: give a list"
    with pytest.raises(ScenarioError, match=r"bad scenario: must be an object \(the scenario\), not an array"):
        check_scenario([])  # type: ignore[arg-type]


def _cycle() -> dict[str, Any]:
    d: dict[str, Any] = {}
    d["self"] = d
    return d


# What only Python can see (json.dumps refuses it, or turns it into something
# else): the scenario, the entry and field koma-sim names, the problem.
HOST_ONLY: list[tuple[str, Any, str, str, str]] = [
    (
        "a set",
        Scenario(turns=[ScriptedTurn([Tool("t", {1, 2})], match=Contains("deploy"))]),  # type: ignore[arg-type]
        'turns[0] (contains "deploy")',
        "steps[0].output",
        "a set, which JSON cannot hold: give a list",
    ),
    (
        "a class left unmade",
        Scenario(turns=[ScriptedTurn([Output("a"), StopAnswering])]),  # type: ignore[list-item]
        "turns[0] (any text)",
        "steps[1]",
        "StopAnswering is a class, not a value: make one, as `StopAnswering(...)`",
    ),
    (
        "bytes",
        Scenario(methods=[MethodAnswer("state", result=b"x")]),  # type: ignore[arg-type]
        "methods[0] (state, every call)",
        "result",
        "bytes, which JSON cannot hold: give a str",
    ),
    (
        "NaN",
        {"turns": [{"steps": [{"do": "pause", "ms": float("nan")}]}]},
        "turns[0] (any text)",
        "steps[0].ms",
        "nan, which JSON cannot hold",
    ),
    (
        "a key that is not a string",
        Scenario(turns=[ScriptedTurn([Event("e", {1: "a"})])]),  # type: ignore[dict-item]
        "turns[0] (any text)",
        "steps[0].data",
        "a key that is not a string (1): JSON's keys are strings",
    ),
    (
        "a function",
        Scenario(turns=[ScriptedTurn([Event("e", {"a b": [1, len]})])]),  # type: ignore[list-item]
        "turns[0] (any text)",
        'steps[0].data["a b"][1]',
        "a function (len), which JSON cannot hold",
    ),
    (
        "an object",
        Scenario(turns=[ScriptedTurn([Tool("t", object())])]),  # type: ignore[arg-type]
        "turns[0] (any text)",
        "steps[0].output",
        "an object of type object, which JSON cannot hold",
    ),
    (
        "ABSENT where a value goes",
        Scenario(turns=[ScriptedTurn([Tool("t", [ABSENT])])]),  # type: ignore[list-item]
        "turns[0] (any text)",
        "steps[0].output[0]",
        "ABSENT, which JSON cannot hold",
    ),
    (
        "a cycle",
        Scenario(turns=[ScriptedTurn([Tool("t", _cycle())])]),
        "turns[0] (any text)",
        "steps[0].output.self",
        "a cycle: this value contains itself",
    ),
]


@pytest.mark.parametrize(
    ("scenario", "entry", "field", "problem"), [pytest.param(s, e, f, p, id=w) for w, s, e, f, p in HOST_ONLY]
)
def test_a_value_json_cannot_hold_is_refused_naming_entry_and_field_in_koma_sims_words(
    scenario: Any, entry: str, field: str, problem: str
) -> None:
    e = builder_says(scenario)
    assert (e.entry, e.field, e.problem) == (entry, field, problem), str(e)
    assert str(e) == f"bad scenario: {': '.join(p for p in (entry, field, problem) if p)}"


def test_scenario_error_is_named_as_koma_sdk_testing_exports_it() -> None:
    e = builder_says({"turns": [{"steps": [{"do": "explode"}]}]})
    assert type(e).__module__ == "koma_sdk.testing"
    assert f"{type(e).__module__}.{type(e).__qualname__}" == "koma_sdk.testing.ScenarioError"
    import traceback

    assert traceback.format_exception_only(e)[0].startswith("koma_sdk.testing.ScenarioError: bad scenario: ")


def test_fake_komas_options_are_checked_before_anything_is_made(tmp_path: Path) -> None:
    bad: list[tuple[dict[str, Any], str]] = [
        ({"delay_ms": "5"}, "FakeKoma: `delay_ms` must be an int of milliseconds >= 0, not '5'"),
        ({"delay_ms": -1}, "FakeKoma: `delay_ms` must be an int of milliseconds >= 0, not -1"),
        ({"delay_ms": True}, "FakeKoma: `delay_ms` must be an int of milliseconds >= 0, not True"),
        ({"env": {"A": 1}}, "FakeKoma: `env` must be a mapping of str to str, not {'A': 1}"),
        ({"executable": 3}, "FakeKoma: `executable` must be a path (a str or os.PathLike), not 3"),
        ({"trace": "yes"}, "FakeKoma: `trace` must be a bool, not 'yes'"),
        ({"hello_timeout": -1}, "FakeKoma: `hello_timeout` must be a number of seconds >= 0 or None, not -1"),
    ]
    for options, message in bad:
        with pytest.raises(TypeError) as info:
            FakeKoma(Scenario(), dir=tmp_path / "k", **options)
        assert str(info.value) == message
    with pytest.raises(TypeError, match="unexpected keyword argument 'delay'"):
        FakeKoma(Scenario(), dir=tmp_path / "k", delay=5)  # type: ignore[call-arg]
    assert not (tmp_path / "k").exists(), "no folder was made"


def test_a_fakes_options_are_koma_sims_and_every_option_of_client_but_executable_and_env() -> None:
    # Declared once (FakeKomaOptions, over the schema's ClientSettings), and
    # the same as @koma/sdk/testing's fake takes: executable, env, delayMs,
    # and `client`, every option of new Client but executable and env.
    schema = json.loads((Path(__file__).resolve().parents[2] / "schema" / "sdk.schema.json").read_text())
    names = list(schema["$defs"]["ClientOptions"]["properties"])
    snake = [re.sub(r"[A-Z]", lambda c: "_" + c.group().lower(), n) for n in names]
    assert set(inspect.signature(Client).parameters) == set(snake), "Client takes the schema's options"
    settings = ClientSettings.__required_keys__ | ClientSettings.__optional_keys__
    assert settings == set(snake) - {"executable", "env"}
    fake = FakeKomaOptions.__required_keys__ | FakeKomaOptions.__optional_keys__
    assert fake == settings | {"executable", "env", "delay_ms"}


async def test_a_fake_passes_the_telemetry_options_on_to_its_clients(tmp_path: Path) -> None:
    class Provider:
        def get_tracer(self, *args: Any, **kw: Any) -> Any:
            raise AssertionError("not traced: telemetry=False")

    provider = Provider()
    koma = FakeKoma(Scenario(), dir=tmp_path / "k", telemetry=False, capture_content=True, tracer_provider=provider)
    try:
        assert koma.options["telemetry"] is False
        assert koma.options["capture_content"] is True
        assert koma.options["tracer_provider"] is provider
        assert koma.client._telemetry is None and koma.new_client()._telemetry is None, "its clients are not traced"
        await koma.client.create()
    finally:
        await koma.aclose()
    with pytest.raises(TypeError, match="`tracer_provider` must be an OpenTelemetry provider"):
        FakeKoma(Scenario(), dir=tmp_path / "k2", tracer_provider=object())  # type: ignore[arg-type]


def test_a_mistake_under_pytest_is_shown_at_the_tests_line_without_the_packages_frames(tmp_path: Path) -> None:
    source = """
from koma_sdk.testing import Scenario, ScriptedTurn

def test_it(fake_koma):
    fake_koma(Scenario(turns=[ScriptedTurn([{"do": "explode"}])]))

def test_options(fake_koma):
    fake_koma(Scenario(), delay_ms="5")

def test_dir(fake_koma):
    fake_koma(Scenario(), dir="x")
"""
    r = run_pytest(tmp_path, source)
    assert "3 failed" in r.stdout, r.stdout + r.stderr
    for said in (
        "koma_sdk.testing.ScenarioError: bad scenario: turns[0] (any text): steps[0].do: unknown step",
        "TypeError: FakeKoma: `delay_ms` must be an int",
        "TypeError: fake_koma(): `dir` is the fixture's own",
    ):
        assert re.search(rf"^E +{re.escape(said)}", r.stdout, re.M), r.stdout
    for frame in ("pytest_plugin.py", "koma_sdk/testing.py", "_scenario.py"):
        assert frame not in r.stdout, r.stdout


def test_the_builder_refuses_before_anything_starts(tmp_path: Path) -> None:
    bad = Scenario(turns=[ScriptedTurn([{"do": "explode"}])])
    with pytest.raises(ScenarioError, match="unknown step"):
        FakeKoma(bad, executable="/nonexistent/koma-sim", dir=tmp_path / "k")
    assert not (tmp_path / "k").exists(), "no folder was made"


async def test_a_hand_written_bad_file_is_refused_by_koma_sim_and_the_client_shows_its_line(tmp_path: Path) -> None:
    file = tmp_path / "s.json"
    file.write_text('{"turns": [{"match": {"contains": "deploy"}, "steps": [{"do": "explode"}]}]}')
    async with Client(SIM, env={"KOMA_SIM_SCENARIO": str(file), "KOMA_SIM_HOME": str(tmp_path)}) as client:
        e = await raises(client.create())
        assert e.code == "transport_failure", e
        line = f'koma-sim: bad scenario {file}: turns[0] (contains "deploy"): steps[0].do: unknown step "explode"'
        assert "exited with code 64" in e.message
        # The message quotes koma's stderr escaped: a backslash (a Windows path's) doubled.
        assert line.replace("\\", "\\\\") in e.message, e.message
        assert client.stderr.startswith(line), client.stderr


# ---------------------------------------------------------------- turns


def fake(fake_koma: FakeKomaFactory, scenario: Scenario, **options: Any) -> FakeKoma:
    return fake_koma(scenario, executable=SIM, **options)


async def out(client: Client, text: str) -> str:
    return (await client.run(text, on_approval="deny")).output


async def test_matchers_by_turn_text_substring_and_regex_times_first_entry(fake_koma: FakeKomaFactory) -> None:
    koma = fake(
        fake_koma,
        Scenario(
            turns=[
                ScriptedTurn([Output("second")], match=TurnNumber(2)),
                ScriptedTurn([Output("exact")], match=Text("exact words")),
                ScriptedTurn([Output("contains")], match=Contains("deploy"), times=2),
                ScriptedTurn([Output("regex")], match=Regex(r"(?i)^fix (\w+)\.rs$"), times="always"),
            ]
        ),
    )
    c = koma.client
    await c.create()
    assert await out(c, "exact words") == "exact"
    assert await out(c, "exact words") == "second", "turn 2 comes first in the list"
    assert await out(c, "please deploy") == "contains"
    assert await out(c, "deploy now") == "contains"
    used = await raises(out(c, "deploy again"))
    assert used.code == "remote" and used.remote is not None and used.remote.code == "unscripted"
    for text in ["fix main.rs", "FIX lib.rs", "fix a.rs"]:
        assert await out(c, text) == "regex", text
    e = await raises(out(c, "fix main.rs now"))
    assert e.remote is not None and e.remote.code == "unscripted", "anchored where it says"


async def test_output_and_tool_steps(fake_koma: FakeKomaFactory) -> None:
    koma = fake(
        fake_koma,
        Scenario(
            turns=[
                ScriptedTurn(
                    [
                        Output("Running the tests. "),
                        Tool("run_tests", {"passed": 42}, input={"suite": "all"}),
                        Tool("lint", "3 warnings", error=True),
                        Output("Done."),
                    ]
                )
            ]
        ),
    )
    await koma.client.create()
    turn = koma.client.turn("check")
    items = await loop(turn)
    assert names(items) == [
        "turn_started",
        "state",
        "output",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "output",
        "turn_finished",
    ]
    r = await turn.result()
    assert (r.status, r.output) == ("completed", "Running the tests. Done.")
    assert [(c.call, c.tool, c.input, c.output, c.error) for c in r.tool_calls] == [
        ("c-1", "run_tests", {"suite": "all"}, {"passed": 42}, False),
        ("c-2", "lint", {}, "3 warnings", True),
    ]


@pytest.mark.parametrize("decision", ["allow", "deny"])
async def test_an_approval_plays_what_follows_each_decision(fake_koma: FakeKomaFactory, decision: str) -> None:
    koma = fake(
        fake_koma,
        Scenario(
            turns=[
                ScriptedTurn(
                    [
                        Approval(
                            "git_push",
                            input={"remote": "origin"},
                            allow=Branch(output="pushed", steps=[Output("Deployed.")]),
                            deny=Branch(
                                output="not pushed", steps=[Output("Not deployed."), Finish("failed", "denied")]
                            ),
                        ),
                        Output(" Bye."),
                    ]
                )
            ]
        ),
    )
    await koma.client.create()
    asked: list[Any] = []

    def answer(request: Any) -> Any:
        asked.append(dict(request))
        return decision

    r = await koma.client.run("deploy", on_approval=answer)
    assert asked == [{"turn": "t-1", "approval": "a-1", "tool": "git_push", "input": {"remote": "origin"}}]
    (call,) = r.tool_calls
    assert call.approval == decision
    if decision == "allow":
        assert (r.status, r.output, call.output, call.error) == ("completed", "Deployed. Bye.", "pushed", False)
    else:
        assert (r.status, r.output, call.output, call.error) == ("failed", "Not deployed.", "not pushed", True)
    assert koma.approvals() == [("a-1", decision)]


async def test_an_approval_without_branches_has_the_formats_defaults(fake_koma: FakeKomaFactory) -> None:
    koma = fake(fake_koma, Scenario(turns=[ScriptedTurn([Approval("rm")], times=2)]))
    await koma.client.create()
    allowed = await koma.client.run("one", on_approval="allow")
    denied = await koma.client.run("two", on_approval="deny")
    assert (allowed.tool_calls[0].output, allowed.tool_calls[0].error) == ("allowed", False)
    assert (denied.tool_calls[0].output, denied.tool_calls[0].error) == ("denied", True)


async def test_pause_for_a_while_or_until_interrupted(fake_koma: FakeKomaFactory) -> None:
    koma = fake(
        fake_koma,
        Scenario(
            turns=[
                ScriptedTurn([Output("a"), Pause(20), Output("b")], match=Text("short")),
                ScriptedTurn([Output("waiting"), Pause(), Output("never")], match=Text("long")),
            ]
        ),
    )
    await koma.client.create()
    assert await out(koma.client, "short") == "ab"
    turn = koma.client.turn("long")
    items = []
    with anyio.fail_after(HANG):
        async for item in turn:
            items.append(item)
            if item.type == "event" and item.name == "output":
                await turn.interrupt()
    r = await turn.result()
    assert (r.status, r.output) == ("interrupted", "waiting")
    assert items[-1].data["status"] == "interrupted"


async def test_event_any_name_outside_the_catalog_skipped_a_catalog_one_delivered(fake_koma: FakeKomaFactory) -> None:
    koma = fake(
        fake_koma,
        Scenario(
            turns=[
                ScriptedTurn(
                    [
                        Output("a"),
                        Event("mystery", {"x": 1}),
                        Event("diagnostic", {"level": "warning", "message": "disk almost full"}),
                        Output("b"),
                    ]
                )
            ]
        ),
    )
    await koma.client.create()
    turn = koma.client.turn("go")
    items = await loop(turn)
    assert names(items) == ["turn_started", "state", "output", "diagnostic", "output", "turn_finished"]
    assert items[3].data == {"level": "warning", "message": "disk almost full"}
    assert items[3].seq == items[2].seq + 2, "the unknown event between them had its seq"
    assert (await turn.result()).output == "ab"


async def test_finish_any_status_with_an_error(fake_koma: FakeKomaFactory) -> None:
    koma = fake(
        fake_koma,
        Scenario(
            turns=[
                ScriptedTurn([Output("x"), Finish("escalated")], match=Text("odd")),
                ScriptedTurn([Finish("failed", "the build broke")], match=Text("failed")),
            ]
        ),
    )
    await koma.client.create()
    odd = await koma.client.run("odd", on_approval="deny")
    assert (odd.status, odd.output) == ("escalated", "x")
    turn = koma.client.turn("failed")
    items = await loop(turn)
    assert items[-1].data == {"turn": "t-2", "status": "failed", "error": "the build broke"}
    assert (await turn.result()).status == "failed"


async def test_exit_mid_turn_fails_the_run_with_transport_failure(fake_koma: FakeKomaFactory) -> None:
    koma = fake(fake_koma, Scenario(turns=[ScriptedTurn([Output("half"), Exit(3)])]))
    await koma.client.create()
    e = await raises(koma.client.run("go", on_approval="deny"))
    assert e.code == "transport_failure"
    assert "exited with code 3" in e.message
    assert e.result is not None
    assert (e.result.turn, e.result.status, e.result.output) == ("t-1", "unknown", "half")


async def test_crash_mid_turn_fails_the_run_and_keeps_the_tool_calls(fake_koma: FakeKomaFactory) -> None:
    koma = fake(
        fake_koma,
        Scenario(turns=[ScriptedTurn([Tool("read_file", "contents"), Output("Reading..."), Crash("SIGSEGV")])]),
    )
    await koma.client.create()
    e = await raises(koma.client.run("go", on_approval="deny"))
    assert e.code == "transport_failure"
    # Windows has no signals: koma-sim.exe's SIGSEGV crash is STATUS_ACCESS_VIOLATION (docs/koma-sim.md, "On Windows").
    if sys.platform == "win32":
        assert "exited with code 0xC0000005 (STATUS_ACCESS_VIOLATION)" in e.message, e.message
    else:
        assert "killed by signal 11" in e.message
    assert e.result is not None
    assert [c.tool for c in e.result.tool_calls] == ["read_file"]
    assert e.result.output == "Reading..."
    assert (await raises(koma.client.state())).code == "transport_failure"


async def test_stop_answering_a_deadline_ends_the_wait_and_close_returns(fake_koma: FakeKomaFactory) -> None:
    koma = fake(fake_koma, Scenario(turns=[ScriptedTurn([Output("a"), StopAnswering()])]))
    await koma.client.create()
    assert (await koma.client.submit("go")).turn == "t-1"
    # The steps play after submit's answer: a state may still be answered
    # before the worker comes to stop_answering; then none is.
    with anyio.fail_after(HANG):
        while True:
            try:
                await koma.client.state(timeout=0.3)
            except KomaError as e:
                assert e.code == "timeout", e
                break
    assert koma.methods()[:2] == ["create", "submit"]
    with anyio.fail_after(HANG):
        await koma.aclose()
    assert koma.client.pid is None


async def test_broken_frame_is_a_protocol_error(fake_koma: FakeKomaFactory) -> None:
    koma = fake(fake_koma, Scenario(turns=[ScriptedTurn([Output("a"), BrokenFrame("INFO something happened")])]))
    await koma.client.create()
    e = await raises(koma.client.run("go", on_approval="deny"))
    assert e.code == "protocol_error", e


# ---------------------------------------------------------------- methods and the default


async def test_methods_a_result_an_error_on_the_nth_call_and_a_late_answer(fake_koma: FakeKomaFactory) -> None:
    state = {"session": "s-x", "status": "idle", "turn": None, "queued": 0, "model": "scripted"}
    koma = fake(
        fake_koma,
        Scenario(
            turns=[ScriptedTurn([Output("ok")], times="always")],
            methods=[
                MethodAnswer("configure", result=state),
                MethodAnswer("submit", nth=2, error=ScriptedError("busy", "turn t-1 is running", data={"turn": "t-1"})),
                MethodAnswer("submit", nth=3, error=ScriptedError("rate_limited")),
                MethodAnswer("state", nth=1, delay_ms=1000),
            ],
        ),
    )
    c = koma.client
    await c.create()
    assert (await c.configure(model="other")).model == "scripted", "answered as scripted, not carried out"
    assert (await c.run("one", on_approval="deny")).status == "completed"
    busy = await raises(c.submit("two"))
    assert busy.code == "remote" and busy.remote is not None
    assert (busy.remote.code, busy.remote.message, busy.remote.data) == ("busy", "turn t-1 is running", {"turn": "t-1"})
    limited = await raises(c.submit("three"))
    assert limited.remote is not None
    assert (limited.remote.code, limited.remote.message) == ("rate_limited", "rate_limited (scripted by the scenario)")
    # The first state is answered a second late; the request after it is answered first.
    order: list[str] = []
    late: list[Any] = []

    async def state_call() -> None:
        late.append(await c.state())
        order.append("state")

    with anyio.fail_after(HANG):
        async with anyio.create_task_group() as tg:
            tg.start_soon(state_call)
            assert (await c.submit("four")).turn == "t-2"
            order.append("submit")
    assert late[0].model == "sim-1", "carried out: the real state, unconfigured"
    assert order == ["submit", "state"]


async def test_unscripted_turns_refused_by_default_or_played_by_the_agent(fake_koma: FakeKomaFactory) -> None:
    refusing = fake(fake_koma, Scenario(turns=[ScriptedTurn([], match=Text("known"))]))
    await refusing.client.create()
    e = await raises(refusing.client.submit("something else"))
    assert e.code == "remote" and e.remote is not None and e.remote.code == "unscripted"
    assert 'no turn of the scenario matches the text "something else"' in e.remote.message
    assert e.remote.data == {"text": "something else"}
    assert (await refusing.client.state()).turn is None, "nothing started"

    agent = fake(
        fake_koma, Scenario(turns=[ScriptedTurn([Output("scripted")], match=Text("known"))], unscripted="agent")
    )
    await agent.client.create()
    assert await out(agent.client, "known") == "scripted"
    r = await agent.client.run("read notes.md", on_approval="deny")
    assert r.tool_calls[0].tool == "read_file", "the keyword agent read"
    assert r.output.startswith("Sim reply")


# ---------------------------------------------------------------- the record


async def test_the_record_every_request_in_order_and_the_helpers(fake_koma: FakeKomaFactory) -> None:
    koma = fake(fake_koma, Scenario(turns=[ScriptedTurn([Approval("write_file"), Output("ok")], times="always")]))
    c = koma.client
    assert koma.requests() == [], "nothing yet (no file)"
    await c.create(model="m-1")
    await c.run("one", on_approval="allow")
    await c.run("two", on_approval="deny", mode="interrupt")
    await c.detach()
    reqs = koma.requests()
    assert [r.n for r in reqs] == list(range(1, len(reqs) + 1))
    assert all(isinstance(r.pid, int) and isinstance(r.id, str) for r in reqs)
    assert reqs[0].params == {"model": "m-1"}
    assert koma.methods() == ["create", "submit", "approve", "interrupt_and_submit", "approve", "detach"]
    assert koma.texts() == ["one", "two"]
    assert koma.approvals() == [("a-1", "allow"), ("a-2", "deny")]
    assert [r.n for r in koma.calls("approve")] == [3, 5]
    assert koma.called("detach") and not koma.called("configure")
    assert read_record(koma.record_path) == reqs
    assert read_record(koma.dir / "nothing.jsonl") == []


# ---------------------------------------------------------------- the fake itself


async def test_nothing_hangs_an_approval_nobody_answers_ends_when_the_client_closes(fake_koma: FakeKomaFactory) -> None:
    koma = fake(fake_koma, Scenario(turns=[ScriptedTurn([Approval("deploy")])]))
    await koma.client.create()
    assert (await koma.client.submit("go")).turn == "t-1"
    with anyio.fail_after(HANG):
        async for item in koma.client.events():
            if item.type == "event" and item.name == "approval_requested":
                break
    assert (await koma.client.state()).status == "waiting"
    pid = koma.client.pid
    assert pid is not None
    with anyio.fail_after(HANG):
        await koma.client.close()
    assert koma.client.pid is None
    assert not alive(pid), "koma-sim is gone and reaped"


async def test_nothing_hangs_a_pause_without_end_then_aclose(tmp_path: Path) -> None:
    async with FakeKoma(Scenario(turns=[ScriptedTurn([Pause()])]), executable=SIM) as koma:
        await koma.client.create()
        await koma.client.submit("go")
        folder = koma.dir
    assert not folder.exists(), "its own temporary folder is removed"
    assert koma.client.pid is None


async def test_options_reach_koma_sim_and_the_client_new_client_and_options(fake_koma: FakeKomaFactory) -> None:
    koma = fake(fake_koma, Scenario(turns=[ScriptedTurn([Output("x")])]), env={"KOMA_SIM_FAULT": "odd_status"})
    await koma.client.create()
    assert (await koma.client.run("go", on_approval="deny")).status == "escalated", "the fault switch acted"
    assert koma.options["executable"] == SIM
    assert sorted(koma.options["env"]) == [
        "KOMA_SIM_DELAY_MS",
        "KOMA_SIM_FAULT",
        "KOMA_SIM_HOME",
        "KOMA_SIM_PROGRESS",
        "KOMA_SIM_RECORD",
        "KOMA_SIM_SCENARIO",
    ]
    async with Client(**koma.options) as mine:
        await mine.create()
    other = koma.new_client()
    await other.create()
    assert koma.methods() == ["create", "submit", "create", "detach", "create"]
    assert len({r.pid for r in koma.requests()}) == 3, "three koma-sims, one record"


#: The pids of koma-sim that `test_the_fixtures_end_returns_after_koma_sim_is_reaped` started.
STARTED: list[int] = []


@pytest.fixture
def reaped_after_fake_koma() -> Iterator[None]:
    """Set up before `fake_koma`, so torn down right after it: none of the
    koma-sims its test started is left, running or a zombie."""
    STARTED.clear()
    yield
    assert STARTED, "the test started koma-sims"
    assert [p for p in child_pids() if p in STARTED] == [], "koma-sim not reaped right after the fixture's end"


async def test_the_fixtures_end_returns_after_koma_sim_is_reaped(
    reaped_after_fake_koma: None, fake_koma: FakeKomaFactory
) -> None:
    for _ in range(6):
        koma = fake(fake_koma, Scenario(turns=[ScriptedTurn([Output("x"), Pause()], times="always")]))
        for client in (koma.client, koma.new_client()):
            await client.create()
            await client.submit("go")
            assert client.pid is not None
            STARTED.append(client.pid)
    assert len([p for p in child_pids() if p in STARTED]) == 12


async def test_new_client_goes_on_with_the_scenario_where_the_first_stopped(fake_koma: FakeKomaFactory) -> None:
    koma = fake(
        fake_koma,
        Scenario(
            turns=[
                ScriptedTurn([Output("Working..."), Crash()]),
                ScriptedTurn([Output("Done.")], match=TurnNumber(2)),
            ]
        ),
    )
    session = (await koma.client.create()).session
    assert (await raises(koma.client.run("task", on_approval="deny"))).code == "transport_failure"
    again = koma.new_client()
    await again.resume(session=session)
    r = await again.run("task", on_approval="deny")
    assert (r.turn, r.status, r.output) == ("t-2", "completed", "Done."), "turns[1], the second turn of the story"
    assert koma.texts() == ["task", "task"]


async def test_the_default_executable_is_koma_sdk_sims(tmp_path: Path) -> None:
    async with FakeKoma(Scenario(turns=[ScriptedTurn([Output("hi")])]), dir=tmp_path / "mine") as koma:
        assert koma.executable == koma_sdk.sim.path()
        await koma.client.create()
        assert await out(koma.client, "x") == "hi"
    assert (tmp_path / "mine" / "scenario.json").exists(), "a folder it was given is left in place"


def test_a_fakes_folder_left_by_a_process_killed_without_a_handler_is_removed_by_the_next_fake() -> None:
    owner = (
        "from koma_sdk.testing import FakeKoma, Scenario\n"
        f"koma = FakeKoma(Scenario(), executable={SIM!r})\n"
        "print(koma.dir, flush=True)\n"
        "import time\n"
        "time.sleep(3600)\n"
    )

    def start() -> tuple[subprocess.Popen[str], Path]:
        p = subprocess.Popen([sys.executable, "-c", owner], stdout=subprocess.PIPE, text=True)
        assert p.stdout is not None
        return p, Path(p.stdout.readline().strip())

    killed, killed_dir = start()
    live, live_dir = start()
    try:
        killed.kill()
        killed.wait()
        assert killed_dir.exists() and live_dir.exists(), "no handler ran: the folder is there"
        koma = FakeKoma(Scenario(), executable=SIM)
        koma.stop()
        assert not killed_dir.exists(), "its owner is gone: removed"
        assert live_dir.exists(), "its owner runs: kept"
        assert re.match(rf"koma-fake-\d+-{os.getpid()}-", koma.dir.name), "the folder names its owner"
    finally:
        live.kill()
        live.wait()
    FakeKoma(Scenario(), executable=SIM).stop()
    assert not live_dir.exists()


# ---------------------------------------------------------------- the fixture, under each runner


def run_pytest(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_it.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if k != "KOMA_SIM_PATH" and not k.startswith("PYTEST_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_it.py"), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


FIXTURE_TEST = """
import os, pytest, trio
from koma_sdk.testing import Approval, Scenario, ScriptedTurn

SCENARIO = Scenario(turns=[ScriptedTurn([Approval("deploy")])])
PIDS = []

async def use(fake_koma, close):
    koma = fake_koma(SCENARIO)
    await koma.client.create()
    await koma.client.submit("go")  # the turn waits on its approval
    PIDS.append(koma.client.pid)
    if close:
        await koma.aclose()

{tests}

def children():
    # This process's children not yet reaped (running or zombies), from every thread.
    pids = []
    for tid in os.listdir("/proc/self/task"):
        try:
            pids += [int(p) for p in open(f"/proc/self/task/{{tid}}/children").read().split()]
        except OSError:
            pass
    return pids

@pytest.fixture
def reaped():
    # Set up before fake_koma, so torn down right after it.
    yield
    assert [p for p in children() if p in PIDS] == []

def test_zz_every_koma_sim_was_stopped():
    assert len(PIDS) == {count}
    assert [p for p in children() if p in PIDS] == []
"""


def test_the_fixture_is_registered_and_works_under_pytest_asyncio_anyio_and_trio(tmp_path: Path) -> None:
    linux_proc("the children of a pytest run")
    tests = """
@pytest.mark.asyncio
async def test_pytest_asyncio(reaped, fake_koma):
    await use(fake_koma, close=False)

@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param

@pytest.mark.anyio
async def test_anyio(reaped, fake_koma, anyio_backend):
    await use(fake_koma, close=False)

@pytest.mark.anyio
async def test_anyio_closed_in_the_test(reaped, fake_koma, anyio_backend):
    await use(fake_koma, close=True)

def test_plain_trio(reaped, fake_koma):
    trio.run(use, fake_koma, False)
"""
    r = run_pytest(tmp_path, FIXTURE_TEST.format(tests=tests, count=6))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "7 passed" in r.stdout, r.stdout
    assert "error" not in r.stdout, r.stdout  # a teardown that found koma-sim unreaped is an error


def test_the_plugin_comes_from_the_packages_entry_point() -> None:
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group="pytest11") if ep.value == "koma_sdk.pytest_plugin"]
    assert found, "koma_sdk registers its pytest plugin"


# ---------------------------------------------------------------- the docs' example

DOC = ROOT / "docs" / "testing-python.md"
EXAMPLE = ROOT / "python" / "examples" / "testing"


def test_the_docs_show_the_examples_files_as_they_are() -> None:
    blocks = re.findall(r'^```(\w+) title="([^"]+)"\n(.*?)^```$', DOC.read_text(), re.S | re.M)
    assert [file for _, file, _ in blocks] == ["python/examples/testing/app.py", "python/examples/testing/test_app.py"]
    for _, file, body in blocks:
        assert body == (ROOT / file).read_text(), f"{file} in docs/testing-python.md"


async def test_the_docs_snippet_of_one_story_across_processes_runs_as_written(fake_koma: FakeKomaFactory) -> None:
    doc = DOC.read_text()
    (body,) = re.findall(r"\*\*One story across processes\.\*\*.*?```python\n(.*?)```", doc, re.S)
    source = "async def snippet(fake_koma):\n" + "".join(f"    {line}\n" for line in body.splitlines())
    scope: dict[str, Any] = {"pytest": pytest, "KomaError": KomaError, "Scenario": Scenario}
    scope.update(ScriptedTurn=ScriptedTurn, Output=Output, Crash=Crash)
    exec(compile(source, str(DOC), "exec"), scope)
    await scope["snippet"](lambda scenario: fake(fake_koma, scenario))


def test_the_examples_tests_pass_as_written_under_asyncio_and_trio() -> None:
    env = {k: v for k, v in os.environ.items() if k != "KOMA_SIM_PATH" and not k.startswith("PYTEST_")}
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_app.py"],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "10 passed" in r.stdout, r.stdout


def test_the_readmes_testing_example_runs_as_pasted(tmp_path: Path) -> None:
    readme = (ROOT / "python" / "README.md").read_text()
    assert "docs/testing-python.md" in readme
    section = readme.split("## Testing your program", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.S)
    r = run_pytest(tmp_path, block)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^[12] passed in ", r.stdout, re.M), r.stdout  # under anyio's default backend(s)
