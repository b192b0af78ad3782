"""The client against every fault switch of koma-sim
(crates/koma-sim/README.md), checked against docs/protocol.md (Lines, Hello,
Events, Failure, Error codes): the twin of faults.test.mjs."""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from helpers import (
    MAX_FRAME,
    NEEDS_SIGUSR1,
    NOT_WRITTEN,
    QUOTE_BYTES,
    SIM,
    MakeClient,
    assert_catalog_event,
    assert_contiguous,
    code_of,
    events_error,
    events_until,
    is_event,
    kill_hard,
    raises,
    running,
    until,
)
from koma_sdk import Client, KomaError

pytestmark = pytest.mark.anyio


def head(message: str) -> str:
    """The part of a transport message before the stderr tail the client appends."""
    return re.split(r"; (?:last lines of stderr|stderr was empty)", message)[0]


async def assert_failed_and_reaped(c: Client, pid: int) -> None:
    """After a failure: a new call fails at once with transport_failure; close reaps the child."""
    assert (await raises(c.state())).code == "transport_failure", "a call after the failure"
    await c.close()
    assert c.pid is None
    assert not running(pid), f"the child {pid} is gone after close"


def tool_pid(hello: Any) -> int:
    found = [d["tool_pid"] for d in hello.diagnostics if isinstance(d, dict) and "tool_pid" in d]
    assert found, f"hello's diagnostics carry the tool pid: {hello.diagnostics!r}"
    return int(found[0])


def kill_if_running(pid: int) -> None:
    if running(pid):
        kill_hard(pid)


# ---------------------------------------------------------------- hello faults


async def test_no_hello_probe_times_out_nothing_written(sim_client: MakeClient) -> None:
    c = sim_client(faults="no_hello")
    queued: list[str] = []

    async def early_state() -> None:
        queued.append(await code_of(c.state()))

    async with anyio.create_task_group() as tg:
        tg.start_soon(early_state)  # waits for a hello that never comes
        assert (await raises(c.probe(timeout=0.3))).code == "timeout"
        pid = c.pid
        assert pid is not None, "the child runs while hello is awaited"
        await c.close()
    # A request that waited for hello was never written.
    assert queued[0] in NOT_WRITTEN, queued
    assert c.pid is None
    assert not running(pid)
    assert "koma-sim: bytes read: 0" in c.stderr, c.stderr
    assert "wrote" not in c.stderr, c.stderr


@pytest.mark.parametrize(
    ("fault", "shown"),
    [
        ("protocol_2", "2"),
        ("protocol_string", '"1"'),
        ("protocol_missing", None),
        ("protocol_float", "1.0"),
        ("protocol_true", "true"),
    ],
)
async def test_a_hello_whose_protocol_is_not_the_integer_1(
    sim_client: MakeClient, fault: str, shown: str | None
) -> None:
    # 1.0 and true equal 1 in Python; the check reads the wire's text.
    c = sim_client(faults=fault)
    queued: list[str] = []

    async def early_state() -> None:
        queued.append(await code_of(c.state()))

    async with anyio.create_task_group() as tg:
        tg.start_soon(early_state)
        e = await raises(c.probe())
    assert e.code == "protocol_mismatch"
    if shown is not None:
        assert shown in str(e), str(e)
    assert queued[0] in NOT_WRITTEN, queued
    later = await raises(c.state())
    assert later.code in NOT_WRITTEN, later.code
    await c.close()
    assert c.pid is None, "the child is stopped"
    assert "koma-sim: bytes read: 0" in c.stderr, c.stderr
    assert "wrote" not in c.stderr, c.stderr


async def test_late_hello_a_call_made_before_hello_waits_for_it(sim_client: MakeClient) -> None:
    c = sim_client(faults="late_hello")
    states: list[Any] = []

    async def early_state() -> None:
        states.append(await c.state())

    async with anyio.create_task_group() as tg:
        tg.start_soon(early_state)
        hello = await c.probe()
    assert hello.protocol == 1
    assert (states[0].status, states[0].session) == ("idle", None)
    await c.close()
    assert "client wrote" not in c.stderr, c.stderr
    assert "koma-sim: detach" in c.stderr, f"closed by detach: {c.stderr}"


async def test_bom_a_hello_starting_with_a_bom_is_a_protocol_error(sim_client: MakeClient) -> None:
    c = sim_client(faults="bom")
    assert (await raises(c.probe())).code == "protocol_error"
    assert (await raises(c.state())).code in NOT_WRITTEN
    await c.close()
    assert c.pid is None
    assert "client wrote" not in c.stderr, c.stderr


# ---------------------------------------------------------------- frame faults

# Per frame fault: a snippet of the offending line its message quotes (if any).
# seq_gap / seq_repeat: the first of their two events is valid and is yielded.
FRAME_FAULTS = {
    "blank_line": None,
    "pretty": None,
    "log_line": "INFO starting worker",
    "invalid_utf8": "bad ",
    "json_array": "[1,2,3]",
    "json_scalar": "42",
    "unknown_type": "bogus",
    "second_hello": "hello",
    "both_result_error": "both",
    "neither": "foo",
    "seq_gap": None,
    "seq_repeat": None,
    "frame_over_40mib": "result",
}


@pytest.mark.parametrize(("fault", "snippet"), list(FRAME_FAULTS.items()))
async def test_a_fatal_frame(sim_client: MakeClient, fault: str, snippet: str | None) -> None:
    c = sim_client(faults=fault)
    await c.probe()
    pid = c.pid
    assert pid is not None
    assert (await raises(c.state())).code == "delivery_unknown"
    error, items = await events_error(c)
    if fault in ("seq_gap", "seq_repeat"):
        assert [e.name for e in items] == ["diagnostic"], f"only the first, valid event is yielded: {items!r}"
    else:
        assert items == [], "no events before the fault"
    assert isinstance(error, KomaError), repr(error)
    assert error.code == "protocol_error"
    message = str(error)
    assert len(head(message)) <= QUOTE_BYTES + 200, (
        f"the message quotes more than {QUOTE_BYTES} bytes: {len(head(message))}"
    )
    longest_x = max((len(m) for m in re.findall(r"x+", message)), default=0)
    assert longest_x <= QUOTE_BYTES, f"a run of {longest_x} bytes of the line is quoted"
    if snippet:
        assert snippet in message, message
    await assert_failed_and_reaped(c, pid)


async def test_a_frame_of_exactly_40_mib_is_accepted(sim_client: MakeClient) -> None:
    c = sim_client(faults="frame_40mib")
    result = await c.request("state")  # the plain JSON: the fault's string stands in for the state
    assert isinstance(result, str), result
    await until(lambda: re.search(r"in place of the answer to id (\S+)", c.stderr) is not None, "the sim's fault line")
    m = re.search(r"in place of the answer to id (\S+)", c.stderr)
    assert m is not None
    overhead = len(f'{{"id":{json.dumps(m.group(1))},"result":""}}')
    assert len(result) == MAX_FRAME - overhead
    assert result == "x" * len(result)
    assert (await c.state()).status == "idle"
    assert (await c.state()).session is None


async def test_a_request_over_40_mib_is_frame_too_large_and_the_client_goes_on(sim_client: MakeClient) -> None:
    c = sim_client()
    session = (await c.create()).session
    assert (await raises(c.submit("x" * MAX_FRAME))).code == "frame_too_large"
    st = await c.state()
    assert (st.session, st.status) == (session, "idle"), "the oversized submit was not written"
    assert (await c.submit("hello")).turn == "t-1", "nothing was written: this is the session's first turn"


# ---------------------------------------------------------------- process faults


async def test_stderr_flood_is_drained_and_the_newest_64_kib_kept(sim_client: MakeClient) -> None:
    c = sim_client(faults="stderr_flood")
    assert (await c.probe()).protocol == 1
    assert (await c.state()).status == "idle"
    await c.close()
    kept = c.stderr.encode()
    assert 32768 < len(kept) <= 65536, len(kept)
    assert "koma-sim: flood end" in c.stderr, c.stderr[-300:]


@pytest.mark.parametrize(
    ("fault", "said"),
    [("exit_mid_request", r"exiting on purpose"), ("kill_mid_request", r"signal|killed|SIGKILL|killing myself")],
)
async def test_the_child_dies_mid_request(sim_client: MakeClient, fault: str, said: str) -> None:
    c = sim_client(faults=fault)
    await c.probe()
    pid = c.pid
    assert pid is not None
    e = await raises(c.state())
    assert e.code == "delivery_unknown"
    assert re.search(said, str(e), re.I), f"the message says why (the stderr tail, the signal): {e}"
    error, _ = await events_error(c)
    assert isinstance(error, KomaError) and error.code == "transport_failure"
    await assert_failed_and_reaped(c, pid)


async def test_orphan_tool_the_request_fails_and_close_kills_the_tool(sim_client: MakeClient) -> None:
    c = sim_client(faults="orphan_tool")
    await c.probe()
    pid = c.pid
    assert pid is not None
    assert (await raises(c.state())).code == "delivery_unknown"
    assert (await raises(c.state())).code == "transport_failure"
    await c.close()
    assert c.pid is None and not running(pid)
    m = re.search(r"koma-sim: tool pid (\d+)", c.stderr)
    assert m, c.stderr
    tool = int(m.group(1))
    try:
        assert not running(tool), f"the orphan tool {tool} is gone when close() returns"
    finally:
        kill_if_running(tool)


@pytest.mark.parametrize("crash", [False, True], ids=["detached by close", "crashed"])
async def test_spawn_tool_the_process_group_is_killed(sim_client: MakeClient, crash: bool) -> None:
    c = sim_client(faults="spawn_tool,exit_mid_request" if crash else "spawn_tool")
    tool = tool_pid(await c.probe())
    try:
        assert running(tool), "the tool runs"
        if crash:
            assert (await raises(c.state())).code == "delivery_unknown"
        else:
            await c.create()
        await c.close()
        assert not running(tool), f"the tool {tool} is gone when close() returns"
    finally:
        kill_if_running(tool)


@pytest.mark.parametrize(
    "faults",
    ["ignore_detach", "ignore_detach,ignore_eof,ignore_sigterm"],
    ids=["close ends stdin", "close escalates to SIGKILL"],
)
async def test_a_child_that_ignores_detach_is_stopped_by_close(sim_client: MakeClient, faults: str) -> None:
    c = sim_client(faults=faults)
    await c.create()
    pid = c.pid
    assert pid is not None
    await c.close()
    assert c.pid is None and not running(pid)
    assert "ignoring detach" in c.stderr, f"detach was tried first: {c.stderr}"
    await c.close()  # idempotent


# ---------------------------------------------------------------- answer faults


async def test_never_answer_cancel_after_writing_and_timeout(sim_client: MakeClient) -> None:
    c = sim_client(faults="never_answer")
    await c.probe()
    pid = c.pid
    assert pid is not None
    outcome: list[str] = []

    async def create(scope: anyio.CancelScope) -> None:
        with scope:
            await c.create()
            outcome.append("answered")
        if scope.cancelled_caught:
            outcome.append("cancelled")

    # Cancelled after it was written and carried out (its diagnostic event proves it).
    async with anyio.create_task_group() as tg:
        scope = anyio.CancelScope()
        tg.start_soon(create, scope)
        await events_until(c, lambda e: is_event(e, "diagnostic"))
        scope.cancel()
    assert outcome == ["cancelled"]

    assert (await raises(c.state(timeout=0.2))).code == "timeout"

    # The cancelled and timed-out calls freed their slots; events still flow.
    async with anyio.create_task_group() as tg:
        scope = anyio.CancelScope()

        async def submit() -> None:
            with scope:
                await c.submit("hello")

        tg.start_soon(submit)
        started = (await events_until(c, lambda e: is_event(e, "turn_started")))[-1]
        assert (started.data["turn"], started.data["text"]) == ("t-1", "hello")
        scope.cancel()

    await c.close()
    assert c.pid is None and not running(pid)
    assert "koma-sim: detach" in c.stderr, f"closed by detach: {c.stderr}"
    assert "stdin closed without detach" not in c.stderr, c.stderr


def held(c: Client, n: int) -> bool:
    return f"({n} held)" in c.stderr


def release(c: Client) -> None:
    assert c.pid is not None
    os.kill(c.pid, signal.SIGUSR1)


@NEEDS_SIGUSR1
async def test_hold_64_pending_then_too_many_reversed_answers_matched_by_id(sim_client: MakeClient) -> None:
    c = sim_client(faults="hold")
    await c.probe()
    got: dict[str, Any] = {}

    async def call(key: str, method: Callable[[], Awaitable[Any]]) -> None:
        got[key] = await method()

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, "create", c.create)
        await until(lambda: held(c, 1), "the create to be held")
        release(c)
    session = got["create"].session

    async with anyio.create_task_group() as tg:
        for i in range(64):
            tg.start_soon(call, f"m{i}", partial(c.configure, model=f"m{i}"))
        await until(lambda: held(c, 64), "64 answers to be held")
        assert (await raises(c.state())).code == "too_many_pending", "the 65th call"
        release(c)
    for i in range(64):
        st = got[f"m{i}"]
        assert (st.session, st.model) == (session, f"m{i}"), f"answer {i} matched to its own request by id"
    assert not held(c, 65), "the 65th was never written"

    # The slots are free again.
    before = c.stderr.count("(1 held)")
    async with anyio.create_task_group() as tg:
        tg.start_soon(call, "next", c.state)
        await until(lambda: c.stderr.count("(1 held)") > before, "the next call to be held")
        release(c)
    # The model is the last configure koma read: the order the 64 tasks were
    # written in is the loop's (trio does not run started tasks in order).
    assert got["next"].session == session
    assert got["next"].model in {f"m{i}" for i in range(64)}


async def test_unknown_ids_are_ignored(sim_client: MakeClient) -> None:
    c = sim_client(faults="unknown_ids")
    created = await c.create()
    assert created.state.status == "idle"
    assert (await c.state()).session == created.session
    assert (await c.submit("hello")).turn == "t-1"
    events = await events_until(c, lambda e: is_event(e, "turn_finished"))
    for e in events:
        assert_catalog_event(e)
    assert_contiguous(events)
    assert (await c.state()).session == created.session


async def test_unknown_event_is_not_yielded_and_unknown_fields_are_dropped(sim_client: MakeClient) -> None:
    c = sim_client(faults="unknown_event")
    hello = await c.probe()
    assert not hasattr(hello, "extra"), "an unknown hello field was passed through"
    created = await c.create()
    assert (await c.submit("hello")).turn == "t-1"
    assert (await c.state()).session == created.session
    events = await events_until(c, lambda e: is_event(e, "turn_finished"))
    for e in events:
        assert_catalog_event(e)
        assert not hasattr(e, "extra"), f"yielded {e!r}"
    assert all(b.seq > a.seq for a, b in zip(events, events[1:], strict=False))
    assert any(b.seq > a.seq + 1 for a, b in zip(events, events[1:], strict=False)), (
        "the mystery events were seq-checked and skipped"
    )
    assert [e.data["turn"] for e in events if e.name == "output"] == ["t-1"] * 6


async def test_event_flood_one_overflow_report_and_requests_keep_flowing(sim_client: MakeClient) -> None:
    c = sim_client(faults="event_flood")
    await c.create()
    assert (await c.submit("hello")).turn == "t-1"  # 2,000 events come before this answer
    assert isinstance((await c.state()).status, str), "responses flow while events overflow"
    first = await c.events().__anext__()
    assert first.type == "overflow", f"the first item after an overflow is the report: {first!r}"
    assert type(first.dropped) is int and first.dropped > 0
    assert type((await c.enqueue("again")).position) is int
    after = await events_until(c, lambda e: is_event(e, "turn_finished") and e.data["turn"] == "t-2")
    assert not any(e.type == "overflow" for e in after), "the overflow is reported once"
    for e in after:
        assert_catalog_event(e)
    assert_contiguous(after)
    t2 = [e.name for e in after if e.name != "state" and e.data.get("turn") == "t-2"]
    assert t2 == ["turn_started"] + ["output"] * 6 + ["turn_finished"]


# ---------------------------------------------------------------- framing variants


@pytest.mark.parametrize("fault", ["crlf", "split_writes"])
async def test_valid_framing_variants(sim_client: MakeClient, fault: str) -> None:
    c = sim_client(faults=fault)
    created = await c.create()
    text = "read docs/ünï.md ✓ 🎉 please"
    assert (await c.submit(text)).turn == "t-1"
    events = await events_until(c, lambda e: is_event(e, "turn_finished"))
    for e in events:
        assert_catalog_event(e)
    assert_contiguous(events)
    mine = [e for e in events if e.name == "state" or e.data.get("turn") == "t-1"]
    got = [e.name for e in mine]
    start = got.index("turn_started")
    assert got[start:] == ["turn_started", "state", "tool_call", "tool_result"] + ["output"] * 6 + ["turn_finished"]
    assert mine[start].data["text"] == text
    reply = "".join(e.data["text"] for e in events if e.name == "output")
    assert f'you said "{text}"' in reply
    assert events[-1].data["status"] == "completed"
    assert (await c.state()).session == created.session


# ---------------------------------------------------------------- spawning


async def test_a_missing_executable_is_spawn_failed() -> None:
    c = Client("/nonexistent/koma")
    try:
        assert (await raises(c.probe())).code == "spawn_failed"
        assert (await raises(c.state())).code in NOT_WRITTEN
    finally:
        await c.close()
    assert c.pid is None


async def test_a_file_that_is_not_executable_is_spawn_failed(tmp_path: Path) -> None:
    f = tmp_path / "koma"
    f.write_text("#!/bin/sh\necho hi\n")
    f.chmod(0o644)
    c = Client(str(f))
    try:
        assert (await raises(c.state())).code == "spawn_failed"
    finally:
        await c.close()
    assert c.pid is None


async def test_the_sim_of_these_tests_has_the_hello_switches() -> None:
    # A sim without protocol_float / protocol_true would exit 64 and make
    # the tests above fail for the wrong reason.
    c = Client(SIM, env={"KOMA_SIM_FAULT": "protocol_float,protocol_true"})
    try:
        assert (await raises(c.probe())).code == "protocol_mismatch"
    finally:
        await c.close()
