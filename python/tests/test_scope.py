"""Leaving a loop over a Turn interrupts the turn at once, whatever holds a
reference to the loop, under every way a program stops waiting: a deadline
(`anyio.fail_after`/`move_on_after`, `asyncio.timeout`, `asyncio.wait_for`,
trio's `move_on_after`/`fail_after`), a cancelled task, a cancelled anyio
task group; and `async with client.turn(...)` ends the turn on the way out,
wherever the body was waiting. Each keeps the exception (and so the frames
of the loop) alive while it checks that the interrupt went out; and a loop
left by its body (an exception, a deadline while the body waits) does too.

`python/dev.py test` runs this file under Python 3.10 and 3.13 as well as
the default one: the collector and the frames differ between them."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import pytest

from helpers import SIM
from koma_sdk import Client, KomaError, Turn
from koma_sdk.pytest_plugin import FakeKomaFactory

pytestmark = pytest.mark.anyio

#: Slack on a busy machine for what must come promptly (the interrupt's effect).
SLACK = 10.0

#: One output, then the agent works until it is interrupted.
PAUSED: dict[str, Any] = {"turns": [{"times": "always", "steps": [{"do": "output", "text": "a"}, {"do": "pause"}]}]}


async def client_of(fake_koma: FakeKomaFactory) -> Client:
    c = fake_koma(PAUSED, executable=SIM).client
    await c.create()
    return c


async def interrupted(turn: Turn) -> None:
    """The turn's result settles with koma's status for an interrupt: the
    interrupt was written when the loop was left (else the pause goes on, and
    this fails after SLACK)."""
    with anyio.fail_after(SLACK):
        result = await turn.result()
    assert result.status == "interrupted", result


async def loop_over(turn: Turn, seen: list[str]) -> None:
    """A plain `async for` over the turn: it waits in the loop for an event
    that never comes (the agent pauses)."""
    async for item in turn:
        seen.append(item.name)


# ---------------------------------------------------------------- anyio (asyncio and trio)


@pytest.mark.parametrize("how", ["fail_after", "move_on_after"])
async def test_a_deadline_around_a_loop_that_waits_interrupts_at_once(fake_koma: FakeKomaFactory, how: str) -> None:
    c = await client_of(fake_koma)
    turn = c.turn("go", on_approval="deny")
    seen: list[str] = []
    kept: list[BaseException] = []
    try:
        if how == "fail_after":
            with anyio.fail_after(0.3):
                await loop_over(turn, seen)
        else:
            with anyio.move_on_after(0.3):
                await loop_over(turn, seen)
    except TimeoutError as e:
        kept.append(e)  # the exception, its traceback and the loop's frames stay alive
    assert seen == ["turn_started", "state", "output"]
    assert bool(kept) == (how == "fail_after")
    await interrupted(turn)


async def test_a_cancelled_task_group_interrupts_a_loop_that_waits(fake_koma: FakeKomaFactory) -> None:
    c = await client_of(fake_koma)
    turn = c.turn("go", on_approval="deny")
    seen: list[str] = []
    kept: list[BaseException] = []

    async def task() -> None:
        try:
            await loop_over(turn, seen)
        except BaseException as e:
            kept.append(e)  # kept alive, with its traceback
            raise

    async with anyio.create_task_group() as tg:
        tg.start_soon(task)
        with anyio.fail_after(SLACK):
            while len(seen) < 3:
                await anyio.sleep(0.01)
        await anyio.wait_all_tasks_blocked()
        tg.cancel_scope.cancel()
    assert kept, "the task was cancelled while its loop waited"
    await interrupted(turn)


async def test_an_exception_of_the_body_kept_alive_interrupts(fake_koma: FakeKomaFactory) -> None:
    c = await client_of(fake_koma)
    turn = c.turn("go", on_approval="deny")
    kept: list[BaseException] = []
    try:
        async for item in turn:
            if item.name == "output":
                raise ValueError("the loop's body failed")
    except ValueError as e:
        kept.append(e)
    assert kept
    await interrupted(turn)


async def test_a_deadline_while_the_body_waits_interrupts(fake_koma: FakeKomaFactory) -> None:
    c = await client_of(fake_koma)
    turn = c.turn("go", on_approval="deny")
    kept: list[BaseException] = []
    try:
        with anyio.fail_after(0.3):
            async for item in turn:
                if item.name == "output":
                    await anyio.sleep(60)  # the deadline comes here, in the body
    except TimeoutError as e:
        kept.append(e)
    assert kept
    await interrupted(turn)


async def test_async_with_turn_ends_it_wherever_the_body_waits(fake_koma: FakeKomaFactory) -> None:
    c = await client_of(fake_koma)
    kept: list[BaseException] = []
    turn: Turn | None = None
    try:
        with anyio.fail_after(0.3):
            async with c.turn("go", on_approval="deny") as turn:
                async for item in turn:
                    if item.name == "output":
                        await anyio.sleep(60)  # the deadline comes here, in the body
    except TimeoutError as e:
        kept.append(e)
    assert kept and turn is not None
    await interrupted(turn)


async def test_async_with_turn_leaves_a_finished_turn_alone(fake_koma: FakeKomaFactory) -> None:
    koma = fake_koma({"turns": [{"steps": [{"do": "output", "text": "a"}]}]}, executable=SIM)
    c = koma.client
    await c.create()
    async with c.turn("go", on_approval="deny") as turn:
        result = await turn.result()
    assert result.status == "completed"
    await c.state()  # after anything the way out might have written
    assert "interrupt" not in koma.methods(), "nothing to interrupt: nothing written"


async def test_aclose_of_the_turn_and_of_a_kept_loop(fake_koma: FakeKomaFactory) -> None:
    c = await client_of(fake_koma)
    turn = c.turn("one", on_approval="deny")
    await turn.id()
    await turn.aclose()
    await interrupted(turn)
    turn = c.turn("two", on_approval="deny")
    async with contextlib.aclosing(aiter(turn)) as events:
        async for item in events:
            if item.name == "output":
                break
    await interrupted(turn)


# ---------------------------------------------------------------- asyncio's own


@pytest.fixture
def asyncio_only(anyio_backend: str) -> None:
    if anyio_backend != "asyncio":
        pytest.skip("asyncio's own deadlines and cancellation")


async def test_asyncio_timeout_or_wait_for_around_a_loop(fake_koma: FakeKomaFactory, asyncio_only: None) -> None:
    c = await client_of(fake_koma)
    turn = c.turn("go", on_approval="deny")
    seen: list[str] = []
    kept: list[BaseException] = []
    try:
        if sys.version_info >= (3, 11):
            async with asyncio.timeout(0.3):
                await loop_over(turn, seen)
        else:
            await asyncio.wait_for(loop_over(turn, seen), 0.3)
    except (TimeoutError, asyncio.TimeoutError) as e:
        kept.append(e)
    assert kept and seen == ["turn_started", "state", "output"]
    await interrupted(turn)


async def test_a_cancelled_asyncio_task_interrupts_its_loop(fake_koma: FakeKomaFactory, asyncio_only: None) -> None:
    c = await client_of(fake_koma)
    turn = c.turn("go", on_approval="deny")
    seen: list[str] = []
    kept: list[BaseException] = []

    async def task() -> None:
        try:
            await loop_over(turn, seen)
        except asyncio.CancelledError as e:
            kept.append(e)
            raise

    running = asyncio.ensure_future(task())
    with anyio.fail_after(SLACK):
        while len(seen) < 3:
            await asyncio.sleep(0.01)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert kept
    await interrupted(turn)


# ---------------------------------------------------------------- trio's own


@pytest.fixture
def trio_only(anyio_backend: str) -> None:
    if anyio_backend != "trio":
        pytest.skip("trio's own cancel scopes")


@pytest.mark.parametrize("how", ["move_on_after", "fail_after"])
async def test_trio_cancel_scopes_around_a_loop(fake_koma: FakeKomaFactory, trio_only: None, how: str) -> None:
    import trio

    c = await client_of(fake_koma)
    turn = c.turn("go", on_approval="deny")
    seen: list[str] = []
    kept: list[BaseException] = []
    try:
        if how == "move_on_after":
            with trio.move_on_after(0.3):
                await loop_over(turn, seen)
        else:
            with trio.fail_after(0.3):
                await loop_over(turn, seen)
    except trio.TooSlowError as e:
        kept.append(e)
    assert seen == ["turn_started", "state", "output"]
    assert bool(kept) == (how == "fail_after")
    await interrupted(turn)


# ---------------------------------------------------------------- the loop's own end


async def test_a_loop_that_ends_with_the_turn_is_not_left(fake_koma: FakeKomaFactory) -> None:
    koma = fake_koma({"turns": [{"steps": [{"do": "output", "text": "a"}]}]}, executable=SIM)
    c = koma.client
    await c.create()
    turn = c.turn("go", on_approval="deny")
    names = [item.name async for item in turn]
    assert names[-1] == "turn_finished"
    assert (await turn.result()).status == "completed"
    # The loop and the Turn let go of and collected: no finalizer interrupts either.
    del turn
    gc.collect()
    await c.state()  # answered after koma read everything written before it
    assert koma.methods() == ["create", "submit", "state"], (
        "no interrupt: the loop ended with its turn, it was not left"
    )
    with pytest.raises(KomaError):
        await c.request("no_such_method")  # the client goes on (a local refusal, not a hang)


def _typed(turn: Turn) -> Callable[[], Awaitable[None]]:
    """What mypy --strict checks of the scoped forms (typing_usage.py has them too)."""

    async def use() -> None:
        loop: AsyncIterator[Any] = aiter(turn)
        async with contextlib.aclosing(aiter(turn)) as events:
            async for _ in events:
                break
        del loop

    return use
