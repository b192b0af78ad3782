"""What a user of koma_sdk.testing writes, for `mypy --strict` (not collected
by pytest): scenarios from the typed classes, the fake and its record, and
the fixture's type. Each `type: ignore` marks what must not type-check (an
unknown signal, a matcher that is not one, a missing field): `--strict`
warns of an ignore that is not needed, so each one is a check."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from typing import assert_type
else:
    from typing_extensions import assert_type

from koma_sdk import Client, Decision
from koma_sdk.pytest_plugin import FakeKomaFactory
from koma_sdk.testing import (
    ABSENT,
    Approval,
    Branch,
    BrokenFrame,
    ClientOptions,
    Contains,
    Crash,
    Event,
    Exit,
    FakeKoma,
    Finish,
    MethodAnswer,
    Output,
    Pause,
    Regex,
    Request,
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

SCENARIO = Scenario(
    about="every part",
    unscripted="agent",
    turns=[
        ScriptedTurn(
            [
                Output("a"),
                Tool("run_tests", {"passed": 42, "names": ["a", "b"]}, input={"suite": "all"}, error=False),
                Approval(
                    "git_push", input=None, allow=Branch(output="pushed"), deny=Branch(steps=[Finish("failed", "no")])
                ),
                Pause(),
                Pause(20),
                Event("mystery", [1, 2.5, None, True]),
                Exit(3),
                Crash("SIGTERM"),
                StopAnswering(),
                BrokenFrame("not JSON"),
                {"do": "output", "text": "a dict is the file's own form"},
            ],
            match=Contains("deploy"),
            times="always",
        ),
        ScriptedTurn([], match=TurnNumber(2)),
        ScriptedTurn([], match=Text("x"), times=2),
        ScriptedTurn([], match=Regex("^fix")),
        {"steps": []},
    ],
    methods=[
        MethodAnswer("submit", nth=2, error=ScriptedError("busy", "turn t-1 is running", data={"turn": "t-1"})),
        MethodAnswer("state", result=None),
        MethodAnswer("state", delay_ms=100, result=ABSENT),
    ],
)

Crash("SIGFOO")  # type: ignore[arg-type]
ScriptedTurn([], match="deploy")  # type: ignore[arg-type]
ScriptedTurn([], times="never")  # type: ignore[arg-type]
Scenario(unscripted="keyword")  # type: ignore[arg-type]
Tool("x")  # type: ignore[call-arg]
Output(42)  # type: ignore[arg-type]
Tool("x", output=object())  # type: ignore[arg-type]

assert_type(check_scenario(SCENARIO), str)
assert_type(read_record("requests.jsonl"), list[Request])


async def use(fake_koma: FakeKomaFactory) -> None:
    koma = fake_koma(SCENARIO, env={"KOMA_SIM_FAULT": "odd_status"}, delay_ms=0, hello_timeout=None)
    assert_type(koma, FakeKoma)
    assert_type(koma.client, Client)
    assert_type(koma.new_client(), Client)
    assert_type(koma.options, ClientOptions)
    assert_type(koma.requests(), list[Request])
    assert_type(koma.calls("approve"), list[Request])
    assert_type(koma.called("configure"), bool)
    assert_type(koma.methods(), list[str | None])
    assert_type(koma.approvals(), list[tuple[str, Decision]])
    assert_type(koma.texts(), list[str])
    client = Client(**koma.options)
    await client.close()
    async with FakeKoma(SCENARIO, executable="/bin/koma-sim", dir="/tmp/k", cwd="/tmp", trace=True) as other:
        await other.client.create()
    await koma.aclose()
    koma.stop()
    try:
        check_scenario({"turns": "x"})
    except ScenarioError as e:
        assert_type(e.entry, str)
        assert_type(e.field, str)
        assert_type(e.problem, str)
