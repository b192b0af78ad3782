"""Every wait a user bounds ends, whatever koma does (the twin of
waits.test.mjs): a turn stopped by its deadline or by cancelling the task
that awaits `run()` settles once koma has finished it and answered the
interrupt, or the core's grace after the stop (docs/semantics.md, "Stopping
a turn"); a loop over `events()`, `close()` and a method's own `timeout` end
by their deadline. Each against a hung koma (koma-sim's `stop_answering`).
How long the grace is, to the millisecond, is the core's test
(crates/koma-transport/src/connection/timers.rs, under a paused clock); here
the wiring: the interrupt was written (koma-sim's record), and the error,
with its words and the partial result, came through.

Also: a turn or `run()` after `close()` fails at once; a client dropped
after its `create()` was cut leaves nothing behind; `repr(turn)`; a Turn's
failure nobody retrieved is reported."""

from __future__ import annotations

import gc
import time
import warnings
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from helpers import SIM, child_pids, raises, sim_env, until
from koma_sdk import Client, KomaError
from koma_sdk.pytest_plugin import FakeKomaFactory

pytestmark = pytest.mark.anyio

#: Slack on a busy machine for a call's own deadline: asserted as an upper bound only (a hang guard).
SLACK = 5.0

OUTPUT_THEN_HUNG = [{"do": "output", "text": "a"}, {"do": "stop_answering"}]
#: A koma that sends one output of its turn, then answers and sends nothing more.
HUNG: dict[str, Any] = {"turns": [{"times": "always", "steps": OUTPUT_THEN_HUNG}]}
BUSY: dict[str, Any] = {"turns": [], "methods": [{"method": "submit", "error": {"code": "busy"}}]}


def koma_threads() -> list[str]:
    """The core's threads in this process (koma-io, koma-spawner, koma-exit-watch)."""
    names = []
    for tid in Path("/proc/self/task").iterdir():
        try:
            name = (tid / "comm").read_text().strip()
        except OSError:
            continue
        if name.startswith("koma-"):
            names.append(name)
    return sorted(names)


async def test_run_timeout_against_a_hung_koma_interrupts_and_raises_timeout_with_the_partial_result(
    fake_koma: FakeKomaFactory,
) -> None:
    koma = fake_koma(HUNG, executable=SIM)
    c = koma.client
    await c.create()
    # A deadline long enough for koma's one output to come first on a busy machine.
    e = await raises(c.run("go", on_approval="deny", timeout=1.0))
    assert e.code == "timeout", e
    assert isinstance(e, TimeoutError)
    assert "did not finish within 1 s; the agent was interrupted" in str(e)
    assert "koma did not end the turn within 1 s of the stop: the turn was given up" in str(e)
    assert e.result is not None
    assert (e.result.turn, e.result.status, e.result.output) == ("t-1", "unknown", "a")
    assert [r.params for r in koma.calls("interrupt")] == [{}], "the interrupt was written, once"


async def test_a_turn_loop_with_a_timeout_against_a_hung_koma_raises_after_its_events(
    fake_koma: FakeKomaFactory,
) -> None:
    koma = fake_koma(HUNG, executable=SIM)
    c = koma.client
    await c.create()
    turn = c.turn("go", on_approval="deny", timeout=1.0)
    items = []
    with pytest.raises(KomaError) as caught:
        async for item in turn:
            items.append(item.name)
    assert caught.value.code == "timeout"
    assert "the turn was given up" in str(caught.value)
    assert caught.value.result is not None and caught.value.result.output == "a"
    assert len(koma.calls("interrupt")) == 1, "the interrupt was written"
    assert items == ["turn_started", "state", "output"]
    assert (await raises(turn.result())) is caught.value, "the loop raises the very error result() raises"
    assert repr(turn) == "<koma_sdk.Turn t-1 failed>"


async def test_a_cancelled_run_against_a_hung_koma_interrupts_the_agent(fake_koma: FakeKomaFactory) -> None:
    koma = fake_koma(HUNG, executable=SIM)
    c = koma.client
    await c.create()
    with anyio.move_on_after(0.3) as scope:
        await c.run("go", on_approval="deny")
    assert scope.cancelled_caught
    # Cancelling the task that awaited run() stops its turn: the agent is
    # interrupted (and the core gives the turn up after its grace, the
    # core's test). The cancellation is what the caller sees; nothing is raised later.
    await until(lambda: koma.called("interrupt"), "the cancelled run's interrupt to be written")
    assert [r.params for r in koma.calls("interrupt")] == [{}]
    await c.close()
    assert c.pid is None


async def test_events_approve_and_close_against_a_hung_koma_end_within_their_bound(
    fake_koma: FakeKomaFactory, anyio_backend: str
) -> None:
    koma = fake_koma(HUNG, executable=SIM)
    c = koma.client
    await c.create()
    await c.submit("go")  # its events go to events()
    items = []
    started = time.monotonic()
    with anyio.move_on_after(0.3) as scope:
        async for item in c.events():
            items.append(item.name)
    took = time.monotonic() - started
    assert scope.cancelled_caught
    assert took < 0.3 + SLACK, f"ended after {took:.2f} s"
    assert items[-3:] == ["turn_started", "state", "output"], "then nothing came"
    started = time.monotonic()
    e = await raises(c.approve("a-1", "allow", timeout=0.3))
    assert e.code == "timeout"
    assert time.monotonic() - started < 0.3 + SLACK
    # close() is bounded on its own (detach is ignored; the end of stdin
    # ends koma-sim). A deadline around it: asyncio stops waiting, the close
    # going on in a task of its own; trio shields it to its end.
    started = time.monotonic()
    with anyio.move_on_after(0.3):
        await c.close()
    took = time.monotonic() - started
    assert took < (0.3 if anyio_backend == "asyncio" else 4.0) + SLACK, f"close() returned after {took:.2f} s"
    await c.close()
    assert c.pid is None
    assert "interrupt" not in koma.methods()


async def test_a_turn_or_run_after_close_fails_with_closed_at_once(fake_koma: FakeKomaFactory) -> None:
    c = fake_koma(HUNG, executable=SIM).client
    await c.create()
    await c.close()
    turn = c.turn("after close", on_approval="deny")
    assert repr(turn) == "<koma_sdk.Turn (no id) failed>", "failed as it was made, without a wake"
    with anyio.fail_after(SLACK):
        assert (await raises(turn.result())).code == "closed"
        assert (await raises(turn.id())).code == "closed"
        with pytest.raises(KomaError) as caught:
            async for _ in c.turn("a loop after close"):
                pass
        assert caught.value.code == "closed"
        e = await raises(c.run("run after close", on_approval="deny"))
    assert e.code == "closed"
    assert e.result is not None and e.result.turn is None
    assert c.pid is None and child_pids() == [], "nothing started again"
    assert koma_threads() == [], "nor the core's threads"


async def test_a_client_dropped_after_its_create_was_cut_leaves_no_process_nor_thread(home: Path) -> None:
    assert koma_threads() == [], "no client of an earlier test is left"
    before = child_pids()
    for delay in (0.0005, 0.002, 0.01, 0.05):
        c = Client(SIM, env=sim_env(home))
        with anyio.move_on_after(delay):
            await c.create()
        del c
        # The runner lets go of the cancellation it delivered (whose
        # traceback holds the client's frames) when the task next yields.
        await anyio.lowlevel.checkpoint()
        gc.collect()
        assert child_pids() == before, f"cut after {delay} s: koma is stopped and reaped"
        assert koma_threads() == [], f"cut after {delay} s: the core's threads have ended"


async def test_repr_of_a_turn_shows_its_id_and_state(fake_koma: FakeKomaFactory) -> None:
    scenario = {"turns": [{"steps": [{"do": "output", "text": "a"}, {"do": "pause"}]}]}
    c = fake_koma(scenario, executable=SIM).client
    await c.create()
    turn = c.turn("go", on_approval="deny")
    assert repr(turn) == "<koma_sdk.Turn (no id yet) starting>"
    assert await turn.id() == "t-1"
    assert repr(turn) == "<koma_sdk.Turn t-1 running>"
    await turn.interrupt()
    assert (await turn.result()).status == "interrupted"
    assert repr(turn) == "<koma_sdk.Turn t-1 finished>"


async def test_a_turns_failure_nobody_retrieved_is_reported_when_it_is_collected(
    fake_koma: FakeKomaFactory, anyio_backend: str
) -> None:
    c = fake_koma(BUSY, executable=SIM).client
    await c.create()
    reported: list[dict[str, Any]] = []
    if anyio_backend == "asyncio":
        import asyncio

        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _loop, context: reported.append(context))
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        unread = c.turn("nobody reads this", on_approval="deny")
        read = c.turn("this one is read", on_approval="deny")
        assert (await raises(read.result())).code == "remote"
        await c.state()  # answered after both submits: both turns have failed
        del unread, read
        gc.collect()
    if anyio_backend == "asyncio":
        loop.set_exception_handler(None)
        assert len(reported) == 1, reported
        assert "a Turn's failure was never retrieved" in reported[0]["message"]
        assert "nobody reads this" in reported[0]["message"]
        error = reported[0]["exception"]
        assert isinstance(error, KomaError) and error.code == "remote"
    else:
        ours = [w for w in warned if "never retrieved" in str(w.message)]
        assert len(ours) == 1, [str(w.message) for w in warned]
        assert issubclass(ours[0].category, RuntimeWarning)
        assert "nobody reads this" in str(ours[0].message)
