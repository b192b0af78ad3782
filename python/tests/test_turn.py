"""The turn layer (client.turn(), client.run()) through koma-sim: plain, read
and approval turns, handlers, deadline and cancellation, mode "interrupt", an
overflow during a turn, and the one event queue shared with events() (the
twin of turn.test.mjs)."""

from __future__ import annotations

import random
import re
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from helpers import MakeClient, is_event, raises, until
from koma_sdk import KomaError

pytestmark = pytest.mark.anyio


def kinds(items: list[Any]) -> list[str]:
    return [i.name if i.type == "event" else i.type for i in items]


async def drain(turn: Any) -> list[Any]:
    return [item async for item in turn]


async def drain_until_raised(turn: Any) -> tuple[list[Any], KomaError]:
    """A loop over a Turn whose result fails: the items it got, and what it raised."""
    items: list[Any] = []
    with pytest.raises(KomaError) as info:
        async for item in turn:
            items.append(item)
    return items, info.value


async def test_run_a_plain_turn_in_one_call(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    r = await c.run("hello", on_approval="deny")
    assert r.status == "completed"
    assert re.fullmatch(r"t-\d+", r.turn)
    assert r.output == f'Sim reply (sim-1, {r.turn}): you said "hello". No tools were needed. Done.'
    assert list(r.tool_calls) == []
    assert r.events == 9, "turn_started, state, six outputs, turn_finished"
    assert r.overflowed is False
    assert (await c.state()).status == "idle"


async def test_run_a_read_turn_records_its_tool_call_and_result(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    r = await c.run("read src/lib.rs", on_approval="deny")
    assert r.status == "completed"
    assert len(r.tool_calls) == 1
    call = r.tool_calls[0]
    assert call.tool == "read_file"
    assert call.input == {"path": "src/lib.rs"}
    assert "simulated contents of src/lib.rs" in call.output
    assert call.error is False
    assert call.approval is None, "no approval was asked"


@pytest.mark.parametrize(
    ("policy", "output"),
    [("allow", r"wrote \d+ bytes to notes\.txt"), ("deny", r"the user denied writing notes\.txt")],
)
async def test_run_approvals_by_a_string_policy(sim_client: MakeClient, policy: str, output: str) -> None:
    c = sim_client()
    await c.create()
    r = await c.run("fix notes.txt", on_approval=policy)  # type: ignore[arg-type]
    assert r.status == "completed"
    call = r.tool_calls[0]
    assert call.tool == "write_file"
    assert call.approval == policy
    assert re.fullmatch(output, call.output)
    assert call.error is (policy == "deny")


async def test_a_plain_function_answers_approvals(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    asked: list[dict[str, Any]] = []

    def decide(request: dict[str, Any]) -> str:
        asked.append(request)
        return "deny" if request["input"]["path"] == "secret.txt" else "allow"

    r = await c.run("write secret.txt", on_approval=decide)  # type: ignore[arg-type]
    assert r.tool_calls[0].approval == "deny"
    assert sorted(asked[0]) == ["approval", "input", "tool", "turn"], "the handler gets approval_requested's data"
    r = await c.run("write notes.txt", on_approval=decide)  # type: ignore[arg-type]
    assert r.tool_calls[0].approval == "allow"


async def test_an_async_handler_may_take_its_time(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    person = anyio.Event()  # a person at a prompt
    asked: list[dict[str, Any]] = []
    waiting = anyio.Event()
    results: list[Any] = []

    async def decide(request: dict[str, Any]) -> str:
        asked.append(request)
        waiting.set()
        await person.wait()
        return "allow"

    async def run() -> None:
        results.append(await c.run("edit notes.txt", on_approval=decide))  # type: ignore[arg-type]

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await waiting.wait()
        st = await c.state()
        assert st.status == "waiting", "the agent waits for the answer"
        assert st.turn == asked[0]["turn"]
        person.set()
    assert results[0].tool_calls[0].approval == "allow"
    assert results[0].status == "completed"


async def test_a_handler_that_raises_denies_and_the_result_raises_after_turn_finished(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    boom = RuntimeError("the prompt crashed")

    def decide(_request: dict[str, Any]) -> str:
        raise boom

    turn = c.turn("write notes.txt", on_approval=decide)  # type: ignore[arg-type]
    items, raised = await drain_until_raised(turn)
    assert kinds(items)[-1] == "turn_finished", "the loop raises after the turn ran to its end"
    denied = next(i for i in items if is_event(i, "tool_result"))
    assert denied.data["error"] is True, "the approval was denied"
    # Every error the package raises is a KomaError (python/README.md, Errors); the handler's
    # own error is its cause.
    with pytest.raises(KomaError) as info:
        await turn.result()
    assert info.value is raised, "the loop raises what the result raises"
    assert info.value.code == "invalid_params"
    assert info.value.__cause__ is boom
    assert "the prompt crashed" in str(info.value)
    assert (await c.state()).status == "idle"


async def test_a_handler_that_answers_something_else_denies_with_invalid_params(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()

    async def decide(_request: dict[str, Any]) -> str:
        return "yes"

    e = await raises(c.run("fix notes.txt", on_approval=decide))  # type: ignore[arg-type]
    assert e.code == "invalid_params"
    assert "on_approval" in str(e) and "yes" in str(e), str(e)
    assert (await c.state()).status == "idle"


async def test_the_core_hands_a_turns_updates_one_class_per_kind(sim_client: MakeClient) -> None:
    # The boundary between the native module and the package is typed: each
    # update is an object of its kind with named fields (no positional
    # tuple), and what the handler returned is judged by the core.
    from koma_sdk import _native

    c = sim_client()
    await c.create()
    seen: list[Any] = []

    def recorded(turn: Any) -> Any:
        # What the client's wake hands this turn, seen on the way (before its first wake).
        take = c._link.turns[turn._key]
        c._link.turns[turn._key] = lambda update: (seen.append(update), take(update))
        return turn

    turn = recorded(c.turn("fix notes.txt", on_approval=lambda _request: "allow"))
    items = await drain(turn)
    result = await turn.result()
    assert kinds(items)[-1] == "turn_finished" and result.status == "completed"
    kinds_seen = [type(u).__name__ for u in seen]
    assert kinds_seen[0] == "TurnId" and seen[0].id == await turn.id()
    asked = [u for u in seen if isinstance(u, _native.TurnApproval)]
    assert asked and all(isinstance(u.approval, str) and isinstance(u.request, bytes) for u in asked)
    ended = seen[-1]
    assert isinstance(ended, _native.TurnEnded) and ended.failure is None, kinds_seen
    assert set(kinds_seen) <= {"TurnId", "TurnApproval", "TurnReady", "TurnEnded"}

    bad = recorded(c.turn("fix notes.txt", on_approval=lambda _request: "Allow"))  # type: ignore[arg-type,return-value]
    e = await raises(bad.result())
    assert e.code == "invalid_params" and "returned 'Allow'" in str(e), str(e)
    failure = seen[-1].failure
    assert isinstance(failure, _native.TurnFailure) and failure.cause == "handler" and not failure.fails_id


async def test_a_turn_the_client_refuses_at_once_fails_its_id_and_result(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    await c.close()
    turn = c.turn("hello")
    e = await raises(turn.id())
    assert e.code == "closed", e
    assert await raises(turn.result()) is e
    assert e.result is not None and e.result.turn is None and e.result.status == "unknown"


async def test_turn_without_a_handler_yields_approval_requested_to_the_application(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    turn = c.turn("fix notes.txt")
    seen = []
    async for item in turn:
        seen.append(item)
        if is_event(item, "approval_requested"):
            await c.approve(item.data["approval"], "allow")
    assert "approval_requested" in kinds(seen)
    r = await turn.result()
    assert r.status == "completed"
    assert r.tool_calls[0].output.startswith("wrote ")
    assert await turn.id() == r.turn


async def test_a_turn_nobody_reads_does_not_wait_forever(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    turn = c.turn("fix notes.txt")
    r = await turn.result()
    assert r.status == "completed"
    assert r.tool_calls[0].approval == "deny"
    assert r.tool_calls[0].error is True


async def test_a_timeout_interrupts_the_agent_and_the_result_raises_after_turn_finished(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    turn = c.turn("fix notes.txt", timeout=0.05)  # waits on an approval nobody answers
    seen, raised = await drain_until_raised(turn)
    with pytest.raises(KomaError) as info:
        await turn.result()
    assert info.value is raised, "a loop tells a timeout from a normal end: it raises"
    assert info.value.code == "timeout"
    assert "0.05 s" in info.value.message, "seconds, as the option was given"
    fin = next(i for i in seen if is_event(i, "turn_finished"))
    assert fin.data["status"] == "interrupted", "turn_finished came first"
    st = await c.state()
    assert (st.status, st.turn) == ("idle", None), "the agent stopped"


async def test_cancelling_run_interrupts_the_agent(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    asked = anyio.Event()

    async def decide(_request: dict[str, Any]) -> str:
        asked.set()
        await anyio.sleep_forever()
        return "allow"

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                await c.run("fix notes.txt", on_approval=decide)  # type: ignore[arg-type]

            tg.start_soon(run)
            await asked.wait()
            scope.cancel()
    assert scope.cancelled_caught
    # The interrupt was sent: the agent stops (koma-sim says so on stderr), and
    # the next turn runs.
    await until(lambda: "koma-sim: turn t-1 interrupted" in c.stderr, "the agent to stop the turn")
    st = await c.state()
    assert (st.status, st.turn) == ("idle", None)
    again = await c.run("again", on_approval="allow")
    assert (again.turn, again.status) == ("t-2", "completed")


async def test_run_refuses_bad_options_and_writes_nothing(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    for options in [
        {"on_approval": "maybe"},
        {"on_approval": None},
        {"on_approval": "allow", "mode": "later"},
        {"on_approval": 5},
    ]:
        e = await raises(c.run("hello", **options))
        assert e.code == "invalid_params", options
    assert (await raises(c.run(b"hello", on_approval="allow"))).code == "invalid_params"  # type: ignore[arg-type]
    assert (await raises(c.run("hello", on_approval="allow", timeout="soon"))).code == "invalid_params"  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        await c.run("hello")  # type: ignore[call-arg]
    assert (await c.state()).turn is None, "no turn started"
    assert (await c.submit("next")).turn == "t-1"


async def test_mode_interrupt_while_a_turn_runs(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    first = c.turn("fix notes.txt")  # waits on its approval
    first_items = []
    async for item in first:
        first_items.append(item)
        if is_event(item, "approval_requested"):
            busy = await raises(c.run("second", on_approval="allow"))
            assert busy.code == "remote" and busy.remote is not None and busy.remote.code == "busy"
            second = await c.run("second", on_approval="allow", mode="interrupt")
            assert second.status == "completed"
            assert 'you said "second"' in second.output
    r = await first.result()
    assert r.status == "interrupted"
    assert kinds(first_items)[-1] == "turn_finished"


async def test_turn_interrupt_stops_this_turn_if_it_still_runs(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    turn = c.turn("fix notes.txt")
    async for item in turn:
        if is_event(item, "approval_requested"):
            await turn.interrupt()
    assert (await turn.result()).status == "interrupted"
    await turn.interrupt()  # finished: nothing is written
    assert (await c.state()).status == "idle"


async def test_an_overflow_during_a_turn_is_reported_by_it(sim_client: MakeClient) -> None:
    c = sim_client(faults="event_flood")  # 2,000 outputs before submit's answer
    await c.create()
    turn = c.turn("hello")
    items = await drain(turn)
    report = next((i for i in items if i.type == "overflow"), None)
    assert report is not None and report.dropped > 0, "the Turn yields the overflow report"
    r = await turn.result()
    assert r.overflowed is True
    assert r.status in ("completed", "unknown"), r.status
    assert (await c.run("again", on_approval="allow")).status == "completed", "the queue is not paused any more"


async def test_a_failing_client_fails_the_turn_with_its_error(sim_client: MakeClient) -> None:
    c = sim_client(faults="kill_mid_request")
    assert (await raises(c.create())).code == "delivery_unknown"
    assert (await raises(c.run("hello", on_approval="allow"))).code == "transport_failure"


async def random_session(c: Any, seed: int) -> None:
    """A random session of turns, queued texts and plain calls, with a reader
    of events() beside it: every event reaches exactly one of them."""
    rand = random.Random(seed)
    by_events: list[int] = []
    by_turns: list[int] = []

    async def reader() -> None:
        async for item in c.events():
            if item.type == "event":
                by_events.append(item.seq)
            if rand.random() < 0.1:
                await anyio.lowlevel.checkpoint()  # a slow reader, sometimes

    async def idle() -> None:
        # The agent's own pace (queued turns run on their own): ask it.
        while (await c.state()).status != "idle":
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        await c.create()
        for step in range(8):
            await idle()
            pick = rand.random()
            if pick < 0.35:
                policy = "allow" if rand.random() < 0.5 else "deny"
                t = c.turn("fix notes.txt" if rand.random() < 0.5 else "read a.md", on_approval=policy)
                by_turns.extend(i.seq for i in await drain(t) if i.type == "event")
                await t.result()
            elif pick < 0.55:
                t = c.turn("hello", on_approval="allow")
                await t.result()  # nobody iterated yet: its events are still its own
                by_turns.extend(i.seq for i in await drain(t) if i.type == "event")
            elif pick < 0.7:
                await c.enqueue("queued read a.md")  # a turn nobody opened: events() gets it
                await c.configure(model=f"m-{step}")
            elif pick < 0.85:
                await c.configure()
            else:
                await c.submit("plain")  # by hand: events() gets it
        await idle()
        await c.detach()
    seen = sorted(by_events + by_turns)
    assert seen, f"seed {seed}: nothing seen"
    assert seen == list(range(seen[0], seen[0] + len(seen))), f"seed {seed}: an event lost or delivered twice"


async def test_events_beside_turns_every_event_reaches_exactly_one(sim_client: MakeClient) -> None:
    for seed in range(1000, 1008):
        await random_session(sim_client(), seed)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the count is what matters; trio runs the same core calls
async def test_ten_thousand_runs_nobody_reads_hold_nothing(sim_client: MakeClient) -> None:
    # A run() hands no event to Python (the core collects its result), and
    # what reaches the client's own stream unread (an idle state after each
    # turn) stays within the protocol's bound: memory is flat however long
    # the client runs. (koma-sim keeps the session in memory: saving it
    # after every turn would cost time growing with the square of the turns.)
    c = sim_client(env={"KOMA_SIM_SAVE": "0"})
    await c.create()
    for i in range(10_000):
        r = await c.run("hello", on_approval="deny")
        assert r.status == "completed", (i, r)
    assert c._link.turns == {}, "no Turn is kept once its result came"
    assert c._queue._cursor._batch == [], "Python holds no event of the client's stream"
    frames, _ = c._native.buffered()
    assert frames <= 256, f"the core holds {frames} events: over the bound"
    items, taken = [], 0
    with anyio.fail_after(20):
        async for item in c.events():
            items.append(item)
            taken += 1
            if item.type == "overflow":
                break
    assert items[-1].type == "overflow", "the unread idle states overflowed once, and were dropped"
