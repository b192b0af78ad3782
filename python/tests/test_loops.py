"""How the package lives in an event loop: trio cancel scopes around a
client, a client asked from a second loop, approval handlers cancelled when
their approval can no longer be answered, and `close()` that runs to its end
when its caller is cancelled."""

from __future__ import annotations

import asyncio
import random
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from helpers import HANG, SIM, TRIO, MakeClient, raises, running, sim_env
from koma_sdk import Client, KomaError

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("anyio_backend", TRIO)
async def test_trio_cancel_scopes_around_clients_never_end_the_run(home: Path) -> None:
    # A cancel scope that fires anywhere around a client (during the spawn,
    # before hello, in create, in a turn, while it closes) and a client that
    # is dropped after its cancelled create: the run goes on, 50 times, and
    # then with 100 clients in one nursery. A watch of the wake descriptor
    # that outlived it used to end the whole trio run (TrioInternalError).
    import trio

    rand = random.Random(7)
    env = sim_env(home)

    async def one(seconds: float) -> None:
        with trio.move_on_after(seconds):
            async with Client(SIM, env=env) as c:
                await c.create()
                await c.run("fix notes.txt", on_approval="allow")

    async def dropped(seconds: float) -> None:
        c = Client(SIM, env=env)
        with trio.move_on_after(seconds):
            await c.create()
        del c

    for _ in range(50):
        await one(rand.random() * 0.05)
        await dropped(rand.random() * 0.05)
    async with trio.open_nursery() as n:
        for _ in range(100):
            n.start_soon(one, rand.random() * 0.05)


def test_a_client_asked_from_a_second_loop_while_the_first_waits_refuses_and_the_first_goes_on(home: Path) -> None:
    c = Client(SIM, env=sim_env(home))
    asked = threading.Event()
    release = threading.Event()
    got: list[Any] = []

    async def first() -> None:
        await c.create()

        async def decide(_request: Any) -> str:
            asked.set()
            await asyncio.get_running_loop().run_in_executor(None, release.wait)
            return "allow"

        got.append(await c.run("fix notes.txt", on_approval=decide))  # type: ignore[arg-type]

    background = threading.Thread(target=lambda: asyncio.run(first()))
    background.start()
    assert asked.wait(HANG), "the first loop's turn asked its approval"
    with pytest.raises(KomaError) as info:
        asyncio.run(c.state())
    assert info.value.code == "lifecycle"
    assert "another event loop" in info.value.message
    release.set()
    background.join(HANG)
    assert not background.is_alive(), "the first loop's run() finished: it was not stalled"
    assert got[0].status == "completed"
    # The first loop is gone: the client moves to the next one.
    assert asyncio.run(c.state()).status == "idle"
    asyncio.run(c.close())


@pytest.mark.parametrize("how", ["timeout", "interrupt", "close"])
async def test_an_approval_handler_is_cancelled_once_its_approval_cannot_be_answered(
    sim_client: MakeClient, how: str
) -> None:
    c = sim_client()
    await c.create()
    asked = anyio.Event()
    cancelled = anyio.Event()
    person = anyio.Event()  # nobody answers

    async def decide(_request: Any) -> str:
        asked.set()
        try:
            await person.wait()
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        return "allow"

    turn = c.turn("fix notes.txt", on_approval=decide, timeout=0.2 if how == "timeout" else None)  # type: ignore[arg-type]
    with anyio.fail_after(HANG):
        await asked.wait()
        if how == "timeout":
            assert (await raises(turn.result())).code == "timeout"
        elif how == "interrupt":
            await turn.interrupt()
            assert (await turn.result()).status == "interrupted"
        else:
            await c.close()
            r = await turn.result()
            assert r.status == "interrupted", "close's detach ended the turn first"
        await cancelled.wait()


@pytest.mark.parametrize("anyio_backend", TRIO)
async def test_leaving_async_with_through_a_cancel_scope_closes_koma_to_its_end(home: Path) -> None:
    import trio

    pid = None
    with trio.move_on_after(0.3) as scope:
        async with Client(SIM, env=sim_env(home)) as c:
            await c.create()
            pid = c.pid
            await c.run("fix notes.txt", on_approval=lambda _r: trio.sleep_forever())  # type: ignore[arg-type, return-value]
    assert scope.cancelled_caught
    assert pid is not None
    assert not running(pid), "close() ran to its end: koma is stopped and reaped"
