"""Cancellation and deadlines free the pending slot at once, and a late
answer is ignored (the twin of cancel.test.mjs). Cancelling the awaiting task
is Python's abort: the cancellation propagates as usual."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

import anyio
import pytest

from helpers import NEEDS_SIGUSR1, MakeClient, code_of, raises, until

pytestmark = pytest.mark.anyio


class Call:
    """A call in a task of its own, cancellable from outside; `done` is set
    when it has settled ("answered", "cancelled" or an error code)."""

    def __init__(self, make: Any) -> None:
        self.make = make
        self.scope = anyio.CancelScope()
        self.done = anyio.Event()
        self.outcome: str | None = None
        self.value: Any = None

    async def run(self) -> None:
        with self.scope:
            self.outcome = await code_of(self._call())
        if self.scope.cancelled_caught:
            self.outcome = "cancelled"
        self.done.set()

    async def _call(self) -> None:
        self.value = await self.make()

    async def cancel(self) -> str | None:
        self.scope.cancel()
        await self.done.wait()
        return self.outcome


async def test_a_cancelled_or_timed_out_call_frees_its_slot_at_once(sim_client: MakeClient) -> None:
    c = sim_client(faults="never_answer")
    await c.probe()
    calls = [Call(c.state) for _ in range(64)]
    async with anyio.create_task_group() as tg:
        for call in calls:
            tg.start_soon(call.run)
        await anyio.wait_all_tasks_blocked()
        assert (await raises(c.state())).code == "too_many_pending"
        assert await calls[0].cancel() == "cancelled"
        # The slot is free: this call is written (and then times out), not refused.
        assert (await raises(c.state(timeout=0.05))).code == "timeout"
        # And the timeout freed it again.
        last = Call(c.state)
        tg.start_soon(last.run)
        await anyio.wait_all_tasks_blocked()
        assert (await raises(c.state())).code == "too_many_pending"
        assert await last.cancel() == "cancelled"
        for call in calls[1:]:
            assert await call.cancel() == "cancelled"
    assert (await raises(c.state(timeout=0.05))).code == "timeout", "every slot is free again"


@NEEDS_SIGUSR1
async def test_a_late_answer_to_a_cancelled_call_is_ignored(sim_client: MakeClient) -> None:
    c = sim_client(faults="hold")

    def held(n: int) -> bool:
        return f"({n} held)" in c.stderr

    def release() -> None:
        assert c.pid is not None
        os.kill(c.pid, signal.SIGUSR1)

    async with anyio.create_task_group() as tg:
        create = Call(c.create)
        tg.start_soon(create.run)
        await until(lambda: held(1), "the create to be held")
        release()
        await create.done.wait()
        assert create.outcome == "answered"

        first = Call(lambda: c.configure(model="first"))
        tg.start_soon(first.run)
        await until(lambda: c.stderr.count("(1 held)") == 2, "the first configure to be held")
        assert await first.cancel() == "cancelled"

        second = Call(lambda: c.configure(model="second"))
        tg.start_soon(second.run)
        await until(lambda: held(2), "the second configure to be held beside the first")
        release()  # the sim sends every held answer, the cancelled one's too
        await second.done.wait()
    assert second.outcome == "answered"
    assert second.value.model == "second"


async def test_a_probe_cancelled_while_waiting_for_hello_leaves_the_client_usable(sim_client: MakeClient) -> None:
    c = sim_client(env={"KOMA_SIM_HELLO_DELAY_MS": "300"})
    with anyio.CancelScope() as scope:
        scope.cancel()
        await c.probe()
    assert scope.cancelled_caught
    probe = Call(c.probe)
    async with anyio.create_task_group() as tg:
        tg.start_soon(probe.run)
        await until(lambda: c.pid is not None, "the child to be started")
        assert await probe.cancel() == "cancelled"
    assert (await c.probe()).protocol == 1
    assert (await c.state()).status == "idle"


# asyncio's own ways to abandon a call: asyncio only, by what they are.
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_asyncio_wait_for_timeout_and_task_cancel_free_their_slots(sim_client: MakeClient) -> None:
    c = sim_client(faults="never_answer")
    await c.probe()
    tasks = [asyncio.ensure_future(c.state()) for _ in range(63)]
    await anyio.wait_all_tasks_blocked()

    async def full() -> bool:
        probe = asyncio.ensure_future(c.state())
        await anyio.wait_all_tasks_blocked()
        if probe.done():
            assert (await raises(probe)).code == "too_many_pending"
            return True
        probe.cancel()
        with pytest.raises(asyncio.CancelledError):
            await probe
        return False

    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(c.state(), 0.05)
    assert not await full(), "wait_for freed its slot"
    if sys.version_info >= (3, 11):
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await c.state()
        assert not await full(), "asyncio.timeout freed its slot"
    extra = asyncio.ensure_future(c.state())
    await anyio.wait_all_tasks_blocked()
    assert await full(), "64 pending: the 65th is refused"
    extra.cancel()
    with pytest.raises(asyncio.CancelledError):
        await extra  # CancelledError propagates as usual, not a KomaError
    assert not await full(), "task.cancel() freed its slot"
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
