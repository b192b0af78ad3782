"""The program's tests, with pytest: each one scripts what the agent does,
runs the program against it (koma-sim, a real child), and checks what the
program said and what it sent. They run under asyncio and trio (anyio's
pytest plugin); `fake_koma` is koma_sdk's fixture."""

import pytest
from app import run_task

from koma_sdk.pytest_plugin import FakeKomaFactory
from koma_sdk.testing import (
    Approval,
    Branch,
    Contains,
    Crash,
    Finish,
    MethodAnswer,
    Output,
    Scenario,
    ScriptedError,
    ScriptedTurn,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_a_safe_tool_is_allowed(fake_koma: FakeKomaFactory) -> None:
    koma = fake_koma(
        Scenario(
            turns=[
                ScriptedTurn(
                    match=Contains("test"),
                    steps=[
                        Approval("run_tests", allow=Branch(output="42 passed")),
                        Output("All 42 tests pass."),
                    ],
                )
            ]
        )
    )
    await koma.client.create()
    assert await run_task(koma.client, "run the tests") == "completed: All 42 tests pass."
    assert koma.approvals() == [("a-1", "allow")]


async def test_any_other_tool_is_denied(fake_koma: FakeKomaFactory) -> None:
    koma = fake_koma(
        Scenario(
            turns=[
                ScriptedTurn(
                    [
                        Approval(
                            "git_push",
                            input={"remote": "origin"},
                            deny=Branch(steps=[Output("I did not push."), Finish("failed", "the push was denied")]),
                        )
                    ]
                )
            ]
        )
    )
    await koma.client.create()
    assert await run_task(koma.client, "deploy") == "failed: I did not push."
    assert koma.approvals() == [("a-1", "deny")]


async def test_koma_crashes_in_the_middle_of_the_task(fake_koma: FakeKomaFactory) -> None:
    koma = fake_koma(Scenario(turns=[ScriptedTurn([Output("Reading the code..."), Crash("SIGKILL")])]))
    await koma.client.create()
    assert await run_task(koma.client, "refactor") == "Koma stopped in the middle of the task."


async def test_koma_crashes_before_it_answers_the_request(fake_koma: FakeKomaFactory) -> None:
    koma = fake_koma(
        Scenario(turns=[ScriptedTurn([Crash("SIGKILL")])], methods=[MethodAnswer("submit", delay_ms=60_000)])
    )
    await koma.client.create()
    assert await run_task(koma.client, "refactor") == "Koma stopped in the middle of the task."


async def test_koma_is_busy(fake_koma: FakeKomaFactory) -> None:
    busy = ScriptedError("busy", "turn t-1 is running", data={"turn": "t-1"})
    koma = fake_koma(Scenario(methods=[MethodAnswer("submit", error=busy)]))
    await koma.client.create()
    assert await run_task(koma.client, "another task") == "Koma is busy with another task: try again later."
    assert not koma.called("approve")
