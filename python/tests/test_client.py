"""The client against koma-sim: methods, lifecycle, local checks, detach,
resume, close (the twin of client.test.mjs). Fault switches are in
test_faults.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

import koma_sdk
import koma_sdk.sim
from helpers import (
    LOOPS,
    RUN_MAIN,
    SIM,
    MakeClient,
    alive,
    events_until,
    finished,
    is_event,
    names,
    raises,
    run_python,
    sim_env,
)
from koma_sdk import Client, KomaError

pytestmark = pytest.mark.anyio


async def test_probe_starts_the_child_and_returns_the_checked_hello(sim_client: MakeClient) -> None:
    c = sim_client()
    assert c.pid is None, "nothing starts before the first call"
    hello = await c.probe()
    assert hello.protocol == 1 and type(hello.protocol) is int
    assert hello.binary.path.endswith("koma-sim.exe" if sys.platform == "win32" else "koma-sim")
    assert isinstance(hello.binary.version, str)
    assert "interrupt_and_submit" in hello.capabilities
    assert isinstance(hello.diagnostics, list)
    assert hello.diagnostics[0]["pid"] == c.pid, "the diagnostics are the wire's JSON"
    assert isinstance(c.pid, int)
    pid = c.pid
    again = await c.probe()
    assert (again.binary.path, again.capabilities, c.pid) == (hello.binary.path, hello.capabilities, pid), (
        "no new child"
    )


async def test_a_plain_turn_streams_output_in_seq_order(sim_client: MakeClient) -> None:
    c = sim_client()
    created = await c.create(cwd=os.getcwd())
    assert re.search(r"\S", created.session)
    assert created.state.status == "idle"
    assert created.state.session == created.session
    turn = (await c.submit("hello there")).turn
    items = await events_until(c, finished(turn))
    evs = [e for e in items if e.type == "event"]
    for a, b in zip(evs, evs[1:], strict=False):
        assert b.seq == a.seq + 1
    outputs = [e for e in evs if e.name == "output" and e.data["turn"] == turn]
    assert len(outputs) >= 2, "the reply streams in pieces"
    assert "turn_started" in names(items)
    assert items[-1].data["status"] == "completed"
    assert isinstance(evs[0].data, dict), "data is the wire's JSON"
    assert type(evs[0].seq) is int


async def test_a_read_turn_calls_read_file_without_approval(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    turn = (await c.submit("show me the README")).turn
    items = await events_until(c, finished(turn))
    call = next(e for e in items if is_event(e, "tool_call"))
    assert call.data["tool"] == "read_file"
    result = next(e for e in items if is_event(e, "tool_result"))
    assert result.data["call"] == call.data["call"]
    assert result.data["error"] is False
    assert "approval_requested" not in names(items)


@pytest.mark.parametrize("decision", ["allow", "deny"])
async def test_an_approval_turn(sim_client: MakeClient, decision: str) -> None:
    c = sim_client()
    await c.create()
    turn = (await c.submit("fix the typo")).turn
    asked = (await events_until(c, lambda e: is_event(e, "approval_requested")))[-1]
    assert asked.data["tool"] == "write_file"
    assert (await c.state()).status == "waiting"
    busy = await raises(c.submit("another"))
    assert busy.code == "remote"
    assert busy.remote is not None
    assert busy.remote.code == "busy"
    assert isinstance(busy.remote.message, str)
    assert busy.remote.data == {"turn": turn}
    assert await c.approve(asked.data["approval"], decision) is None  # type: ignore[func-returns-value]
    rest = await events_until(c, finished(turn))
    result = next(e for e in rest if is_event(e, "tool_result"))
    assert result.data["error"] is (decision == "deny")
    assert rest[-1].data["status"] == "completed"
    wrong = await raises(c.approve("a-nope", "allow"))
    assert wrong.code == "remote"
    assert wrong.remote is not None and wrong.remote.code == "unknown_approval"
    assert KomaError is koma_sdk.KomaError and isinstance(wrong, Exception)


async def test_enqueue_interrupt_interrupt_and_submit_configure(sim_client: MakeClient) -> None:
    c = sim_client(delay_ms=20)
    await c.create()
    first = await c.submit("a long answer")
    queued = await c.enqueue("the queued one")
    assert queued.position >= 1
    assert (await c.state()).queued == 1
    stopped = await c.interrupt()
    assert stopped.turn == first.turn
    items = await events_until(c, lambda e: is_event(e, "turn_started") and e.data["text"] == "the queued one")
    fin = next(e for e in items if finished(first.turn)(e))
    assert fin.data["status"] == "interrupted"
    both = await c.interrupt_and_submit("instead")
    assert isinstance(both.turn, str)
    assert both.interrupted is not None
    state = await c.configure(model="sim-2")
    assert state.model == "sim-2"
    after = await c.interrupt()
    assert after.turn is None or isinstance(after.turn, str)


async def test_detach_then_resume_replays_in_a_new_process(sim_client: MakeClient) -> None:
    a = sim_client()
    session = (await a.create()).session
    turn = (await a.submit("hello")).turn
    items = await events_until(a, finished(turn))
    pid = a.pid
    assert pid is not None
    assert await a.detach() is None  # type: ignore[func-returns-value]
    assert not alive(pid), "the child has exited (and been reaped) when detach returns"
    after = [e async for e in a.events()]
    assert all(e.type == "event" for e in after), "the iterator ends after detach"
    assert (await raises(a.state())).code == "lifecycle"
    evs = [e for e in items if e.type == "event"]
    last = evs[-1]
    mid = evs[1].seq

    b = sim_client()
    resumed = await b.resume(session, after=mid)
    assert resumed.session == session
    assert resumed.state.status == "idle"
    replay = await events_until(b, lambda e: e.type == "event" and e.seq == last.seq)
    assert replay[0].seq == mid + 1, "the replay starts after `after`"
    t2 = (await b.submit("again")).turn
    more = await events_until(b, finished(t2))
    assert all(e.seq > last.seq for e in more if e.type == "event"), "new events continue the sequence"


async def test_the_lifecycle_is_enforced_locally(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    assert (await raises(c.create())).code == "lifecycle"
    assert (await raises(c.resume("s"))).code == "lifecycle"
    other = sim_client()
    await other.state()
    assert (await raises(other.create())).code == "lifecycle", "create only as the first request"
    d = sim_client()
    await d.detach()
    assert (await raises(d.state())).code == "lifecycle"
    assert (await raises(d.detach())).code == "lifecycle"


async def test_params_are_checked_locally_naming_the_field(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    cases = [
        (lambda: c.submit(5), "`text`"),  # type: ignore[arg-type]
        (lambda: c.approve("a", "maybe"), "`decision`"),  # type: ignore[arg-type]
        (lambda: c.configure(model=3), "`model`"),  # type: ignore[arg-type]
        (lambda: c.request("state", {"extra": True}), "`extra`"),
        (lambda: c.request("submit", {"txt": "x"}), "`txt`"),
        (lambda: c.request("submit", {}), "`text`"),
        (lambda: c.request("state", "text"), "object"),  # type: ignore[arg-type]
        (lambda: c.request("state", [1]), "object"),  # type: ignore[arg-type]
    ]
    for call, pattern in cases:
        e = await raises(call())
        assert e.code == "invalid_params", f"{e.code}: {e}"
        assert pattern in str(e), str(e)
    assert (await raises(c.request("no_such_method", {}))).code == "unsupported"
    assert (await raises(c.state(timeout="soon"))).code == "invalid_params"  # type: ignore[arg-type]
    assert (await c.state()).status == "idle", "the client goes on"


async def test_request_sends_the_methods_of_the_table_with_their_checks(sim_client: MakeClient) -> None:
    c = sim_client()
    created = await c.request("create", {})
    assert isinstance(created, dict) and isinstance(created["session"], str), "request() returns the plain JSON"
    state = await c.request("state")
    assert state == {"session": created["session"], "status": "idle", "turn": None, "queued": 0, "model": "sim-1"}


async def test_stderr_is_drained_and_kept(sim_client: MakeClient) -> None:
    c = sim_client()
    assert c.stderr == ""
    await c.create()
    await c.detach()
    assert "koma-sim: " in c.stderr


async def test_close_is_idempotent_and_reaps_the_child(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    pid = c.pid
    assert pid is not None
    async with anyio.create_task_group() as tg:
        tg.start_soon(c.close)
        tg.start_soon(c.close)
    await c.close()
    assert not alive(pid)
    assert c.pid is None
    assert (await raises(c.state())).code == "closed"
    assert (await raises(c.probe())).code == "closed"
    never = sim_client()
    await never.close()
    assert (await raises(never.state())).code == "closed"


async def test_a_close_that_finds_the_client_closed_still_delivers_what_another_close_awaits(
    sim_client: MakeClient,
) -> None:
    # A first close waits (koma ignores detach: about 2 s of grace). The
    # loop is then kept busy until the core has closed, so that the wake
    # carrying the first close's answer is not read yet, and a second close
    # finds the client closed. It must hand over that answer before it lets
    # go of the wake: the first close returns.
    c = sim_client(faults="ignore_detach")
    await c.create()
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(c.close)
            await anyio.wait_all_tasks_blocked()
            assert not c._native.is_closed(), "the first close is still waiting for koma"
            deadline = time.monotonic() + 30
            while not c._native.is_closed():  # the core's own threads close it; the loop reads nothing meanwhile
                assert time.monotonic() < deadline, "the core did not close"
            await c.close()
    assert c.pid is None


async def test_close_with_requests_in_flight_answers_them_first(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    statuses: list[str] = []

    async def one() -> None:
        statuses.append((await c.state()).status)

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(one)
        await anyio.wait_all_tasks_blocked()  # the three are written and wait for their answers
        await c.close()
    assert statuses == ["idle"] * 3


async def test_events_is_one_queue_a_second_iteration_goes_on(sim_client: MakeClient) -> None:
    c = sim_client()
    await c.create()
    turn = (await c.submit("hi")).turn
    first = []
    async for e in c.events():
        first.append(e)
        if len(first) == 2:
            break
    rest = await events_until(c, finished(turn))
    assert rest[0].seq == first[1].seq + 1


async def test_async_with_closes_the_client(home: Path) -> None:
    async with Client(SIM, env=sim_env(str(home))) as c:
        await c.create()
        pid = c.pid
        assert pid is not None
    assert not alive(pid)
    assert (await raises(c.state())).code == "closed"


async def test_koma_sdk_sim_names_a_koma_sim_that_runs(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KOMA_SIM_PATH", SIM)
    path = koma_sdk.sim.path()
    assert os.path.isabs(path) and os.access(path, os.X_OK), path
    monkeypatch.setenv("KOMA_SIM_PATH", str(home / "nothing-here"))
    with pytest.raises(FileNotFoundError):
        koma_sdk.sim.path()
    async with Client(path, env=sim_env(home)) as c:
        hello = await c.probe()
        assert os.path.basename(hello.binary.path).startswith("koma-sim")


@pytest.mark.parametrize("loop", LOOPS)
def test_a_script_that_closes_its_client_exits_by_itself(home: Path, loop: str) -> None:
    r = run_python(f"""
async def main():
    c = Client(SIM, env={sim_env(home)!r})
    await c.create()
    turn = (await c.submit("hi")).turn
    async for e in c.events():
        if e.type == "event" and e.name == "turn_finished" and e.data["turn"] == turn:
            break
    await c.close()
    print("done")
{RUN_MAIN[loop]}
""")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "done"


async def test_the_typing_usage_file_runs_against_koma_sim() -> None:
    import typing_usage

    await typing_usage.main(SIM)


def test_the_typing_usage_file_passes_mypy_strict() -> None:
    pytest.importorskip("mypy")
    usage = Path(__file__).resolve().parent / "typing_usage.py"
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(usage)], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr


async def test_a_timeout_is_also_a_timeout_error_in_seconds_and_math_inf_is_no_bound(sim_client: MakeClient) -> None:
    import math
    import pickle

    c = sim_client(faults="never_answer")
    await c.probe(timeout=math.inf)  # None and math.inf: no bound
    with pytest.raises(TimeoutError) as info:  # one clause for the package's deadlines and the loop's
        await c.state(timeout=0.05)
    e = info.value
    assert isinstance(e, KomaError) and e.code == "timeout"
    assert "within 0.05 s" in e.message, "seconds, as the option was given"
    assert repr(e).startswith("TimedOut(code='timeout'"), repr(e)
    e.result = None
    again = pickle.loads(pickle.dumps(e))
    assert (type(again), again.code, again.message) == (type(e), e.code, e.message)
    assert isinstance(again, TimeoutError)
    with pytest.raises(KomaError) as bad:
        await c.state(timeout=-1)
    assert bad.value.code == "invalid_params"
    assert not isinstance(bad.value, TimeoutError)


async def test_a_failed_run_pickles_with_its_result(sim_client: MakeClient) -> None:
    import pickle

    c = sim_client()
    await c.create()
    e = await raises(c.run("fix notes.txt", on_approval=lambda _r: "perhaps"))  # type: ignore[arg-type, return-value]
    assert e.code == "invalid_params" and e.result is not None
    again = pickle.loads(pickle.dumps(e))
    assert again.result == e.result, "the result survives pickling"
    assert again.result.tool_calls[0].approval == "deny"


def test_koma_sdk_spawn_picks_the_spawn_path_and_a_bad_value_is_refused_with_the_cores_message(home: Path) -> None:
    # The core reads KOMA_SDK_SPAWN once per process for both packages: the
    # values Node takes (`auto` included), and the same words for a bad one
    # (__test__/client.test.mjs).
    body = f"""
import asyncio
async def main():
    try:
        c = Client(SIM, env={sim_env(home)!r})
    except KomaError as e:
        print(json.dumps({{"code": e.code, "message": e.message}}))
        return
    async with c:
        st = await c.state()
    print(json.dumps({{"status": st.status}}))
asyncio.run(main())
"""
    for mode in ("auto", "no-pidfd", "portable", ""):
        r = run_python(body, env={"KOMA_SDK_SPAWN": mode})
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout) == {"status": "idle"}, f"KOMA_SDK_SPAWN={mode}"
    r = run_python(body, env={"KOMA_SDK_SPAWN": "pidfd-please"})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {
        "code": "invalid_params",
        "message": 'KOMA_SDK_SPAWN="pidfd-please" names no spawn path: it must be `auto`, `no-pidfd`, `portable`, or unset',
    }
