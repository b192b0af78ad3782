"""Every moment of a client's life: close and failure at any point leave no
process and no descriptor behind; bad input is refused before anything is
written (the twin of lifecycle.test.mjs)."""

from __future__ import annotations

import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from helpers import (
    ROOT,
    SIM,
    MakeClient,
    alive,
    child_pids,
    code_of,
    events_until,
    finished,
    group_running,
    is_event,
    last_json,
    open_fds,
    raises,
    run_python,
    sim_env,
    until,
)
from koma_sdk import Client, EventStream, KomaError

pytestmark = pytest.mark.anyio


async def settle(outcome: list[str], call: Callable[[], Awaitable[Any]]) -> None:
    outcome.append(await code_of(call()))


async def warm_up(home: Path) -> None:
    """One full client first: what the package and the event loop open once
    per process (a runtime, a wake-up descriptor) is then in every baseline."""
    c = Client(SIM, env=sim_env(home))
    await c.create()
    async for _ in c.events():
        break
    await c.close()


async def collect() -> None:
    """Collect garbage, letting the loop run the finalizers it schedules."""
    for _ in range(5):
        gc.collect()
        await anyio.lowlevel.checkpoint()


# ---------------------------------------------------------------- close in every phase


async def test_close_as_the_first_call_starts_leaves_no_child(home: Path) -> None:
    await warm_up(home)
    before = child_pids()
    fds = open_fds()
    for i in range(10):
        c = Client(SIM, env=sim_env(home))
        outcome: list[str] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(settle, outcome, c.state)
            await anyio.lowlevel.checkpoint()
            await c.close()
        # Settled either way: by close (hello had not come), or answered (on a
        # busy machine hello can come, and the call be written, before close).
        assert outcome[0] in ("closed", "answered"), outcome
        assert child_pids() == before, f"round {i}: no child left (not even unreaped) when close() returns"
        assert open_fds() == fds, f"round {i}: a descriptor is still open right after close() returned"


PHASES = ["before the first call", "before hello", "ready", "during a turn", "with events unread", "after a failure"]


@pytest.mark.parametrize("phase", PHASES)
async def test_close_in_every_phase_leaves_no_process_and_no_descriptor(home: Path, phase: str) -> None:
    await warm_up(home)
    fds = open_fds()
    kids = child_pids()
    env = sim_env(home, faults="exit_mid_request" if phase == "after a failure" else ())
    if phase == "before hello":
        env["KOMA_SIM_HELLO_DELAY_MS"] = "600000"  # the end of stdin cuts it short
    c = Client(SIM, env=env)
    outcome: list[str] = []
    async with anyio.create_task_group() as tg:
        if phase == "before hello":
            tg.start_soon(settle, outcome, c.probe)
            await until(lambda: c.pid is not None, "the child to be started")
        elif phase == "ready":
            await c.create()
        elif phase == "during a turn":
            await c.create()
            await c.submit("fix notes.txt")
            await events_until(c, lambda e: is_event(e, "approval_requested"))
            assert (await c.state()).status == "waiting"
        elif phase == "with events unread":
            await c.create()
            turn = await c.submit("read a.md")
            assert turn.turn == "t-1"
        elif phase == "after a failure":
            await c.probe()
            assert (await raises(c.state())).code == "delivery_unknown"
        pid = c.pid
        await c.close()
    assert open_fds() == fds, "a descriptor is still open right after close() returned"
    assert child_pids() == kids, "a child is left (running or unreaped) right after close() returned"
    assert c.pid is None
    if pid is not None:
        assert not alive(pid), f"koma {pid} is gone and reaped"
    if phase == "before hello":
        assert outcome == ["closed"], outcome
    assert (await raises(c.state())).code == "closed"


async def test_descriptors_are_all_closed_when_close_returns(home: Path) -> None:
    await warm_up(home)
    before = open_fds()
    for i in range(30):
        c = Client(SIM, env=sim_env(home))
        await c.state()
        if i % 3 == 1:
            c.events()
        await c.close()
        assert open_fds() == before, f"round {i}: a descriptor is still open right after close() returned"


# ---------------------------------------------------------------- collection


def live(kind: type) -> int:
    """How many objects of `kind` the collector still tracks."""
    return sum(1 for o in gc.get_objects() if type(o) is kind)


async def test_closed_clients_and_their_iterators_are_collected(home: Path) -> None:
    async def one() -> None:
        c = Client(SIM, env=sim_env(home))
        await c.create()
        turn = (await c.submit("hello")).turn
        async for e in c.events():
            if finished(turn)(e):
                break
        await c.close()

    await one()
    await collect()
    clients, streams = live(Client), live(EventStream)
    for _ in range(20):
        await one()
    await collect()
    assert (live(Client), live(EventStream)) == (clients, streams), "every client and its event stream were collected"


async def test_a_calls_deadline_keeps_nothing_of_the_client(home: Path) -> None:
    refs: list[weakref.ref[Any]] = []

    async def one() -> None:
        c = Client(SIM, env=sim_env(home))
        await c.state(timeout=3600)
        refs.append(weakref.ref(c))
        await c.close()

    for _ in range(10):
        await one()
    await collect()
    assert [r for r in refs if r() is not None] == [], "a settled call's deadline holds no client"


# ---------------------------------------------------------------- bad input


async def test_a_call_its_signature_cannot_bind_is_a_type_error(sim_client: MakeClient) -> None:
    c = sim_client()
    unbindable: list[Callable[[], Any]] = [
        lambda: c.submit(),  # type: ignore[call-arg]
        lambda: c.enqueue(),  # type: ignore[call-arg]
        lambda: c.interrupt_and_submit(),  # type: ignore[call-arg]
        lambda: c.approve(),  # type: ignore[call-arg]
        lambda: c.approve("a-1"),  # type: ignore[call-arg]
        lambda: c.resume(),  # type: ignore[call-arg]
        lambda: c.request(),  # type: ignore[call-arg]
        lambda: c.state(timout=1),  # type: ignore[call-arg]
        lambda: c.create(session="s"),  # type: ignore[call-arg]
        lambda: c.submit("x", mode="interrupt"),  # type: ignore[call-arg]
        lambda: c.configure("sim-2"),  # type: ignore[misc]
        lambda: c.close(timeout=1),  # type: ignore[call-arg]
        lambda: c.run("x"),  # type: ignore[call-arg]
        lambda: c.turn("x", signal=None),  # type: ignore[call-arg]
        lambda: Client(SIM, cdw="."),  # type: ignore[call-arg]
        lambda: Client(),  # type: ignore[call-arg]
    ]
    for i, call in enumerate(unbindable):
        with pytest.raises(TypeError):
            await call()
        assert c.pid is None, f"case {i} started the child"
    # Nothing was written: `create` is still accepted as the first request.
    assert isinstance((await c.create()).session, str)


def bad_constructions() -> list[tuple[str, Callable[[], Client], str]]:
    return [
        ("an int", lambda: Client(123), "executable"),  # type: ignore[arg-type]
        ("None", lambda: Client(None), "executable"),  # type: ignore[arg-type]
        ("empty", lambda: Client(""), "executable"),
        ("a NUL in the path", lambda: Client(SIM + "\0"), "NUL"),
        ("a cwd that is an int", lambda: Client(SIM, cwd=3), "cwd"),  # type: ignore[arg-type]
        ("env a string", lambda: Client(SIM, env="A=1"), "env"),  # type: ignore[arg-type]
        ("an env value an int", lambda: Client(SIM, env={"A": 1}), "A"),  # type: ignore[dict-item]
        ("an env key an int", lambda: Client(SIM, env={1: "a"}), "env"),  # type: ignore[dict-item]
        ("an env key with =", lambda: Client(SIM, env={"A=B": "x"}), "A=B"),
        ("an env value with NUL", lambda: Client(SIM, env={"KOMA_X": "a\0b"}), "NUL"),
        ("trace a string", lambda: Client(SIM, trace="yes"), "trace"),  # type: ignore[arg-type]
        ("hello_timeout a string", lambda: Client(SIM, hello_timeout="soon"), "hello_timeout"),  # type: ignore[arg-type]
        ("hello_timeout negative", lambda: Client(SIM, hello_timeout=-1.0), "hello_timeout"),
        ("hello_timeout NaN", lambda: Client(SIM, hello_timeout=float("nan")), "hello_timeout"),
    ]


@pytest.mark.parametrize(("what", "make", "named"), bad_constructions(), ids=[b[0] for b in bad_constructions()])
def test_bad_constructor_arguments_are_invalid_params(what: str, make: Callable[[], Client], named: str) -> None:
    # Linux's /proc lists the children; elsewhere the constructor's raising is what shows that nothing started.
    children = child_pids if sys.platform == "linux" else list
    before = children()
    with pytest.raises(KomaError) as info:
        make()
    assert info.value.code == "invalid_params", f"{what}: {info.value.code} {info.value}"
    assert named in str(info.value), str(info.value)
    assert children() == before, "nothing was started"


async def test_values_json_cannot_hold_are_invalid_params_and_nothing_is_written(sim_client: MakeClient) -> None:
    c = sim_client(env={"KOMA_SIM_BENCH": "1"})
    circular: dict[str, Any] = {}
    circular["self"] = circular
    cases: list[tuple[str, Callable[[], Awaitable[Any]], str | None]] = [
        ("bytes", lambda: c.submit(b"bytes"), "text"),  # type: ignore[arg-type]
        ("None", lambda: c.submit(None), "text"),  # type: ignore[arg-type]
        ("an int", lambda: c.enqueue(1), "text"),  # type: ignore[arg-type]
        ("a lone high surrogate", lambda: c.submit("a\ud800b"), "text"),
        ("a lone high surrogate at the end", lambda: c.submit("end \ud83d"), "text"),
        ("a lone low surrogate", lambda: c.interrupt_and_submit("\ude00 start"), "text"),
        ("a decision of another value", lambda: c.approve("a-1", "maybe"), "decision"),  # type: ignore[arg-type]
        ("`after` a bool (JSON true is no integer)", lambda: c.resume("s", after=True), "after"),
        ("`after` a float", lambda: c.resume("s", after=1.5), "after"),  # type: ignore[arg-type]
        ("a session of bytes", lambda: c.resume(b"s"), "session"),  # type: ignore[arg-type]
        ("a set inside params", lambda: c.request("bench_blob", {"bytes": {1, 2}}), None),
        ("NaN", lambda: c.request("bench_blob", {"bytes": float("nan")}), None),
        ("infinity", lambda: c.request("bench_blob", {"bytes": float("inf")}), None),
        ("a set as params", lambda: c.request("bench_blob", {1, 2}), None),  # type: ignore[arg-type]
        ("a key that is not a str", lambda: c.request("bench_blob", {1: 2}), None),  # type: ignore[dict-item]
        ("an object", lambda: c.request("bench_blob", {"bytes": object()}), None),
        ("a circular dict", lambda: c.request("bench_blob", circular), None),
        ("a lone surrogate in params", lambda: c.request("bench_blob", {"x": "\udfff"}), None),
        ("a method that is not a str", lambda: c.request(5), "method"),  # type: ignore[arg-type]
        ("a timeout that is a str", lambda: c.state(timeout="soon"), "timeout"),  # type: ignore[arg-type]
        ("a negative timeout", lambda: c.state(timeout=-1), "timeout"),
        ("a NaN timeout", lambda: c.state(timeout=float("nan")), "timeout"),
    ]
    problems = []
    for what, call, named in cases:
        e = await raises(call())
        if e.code != "invalid_params" or (named and named not in str(e)):
            problems.append(f"{what}: {e.code}: {e}" + (f" (does not name `{named}`)" if named else ""))
    assert problems == [], "\n".join(problems)
    # Nothing was written: `create` is still accepted as the first request.
    assert isinstance((await c.create()).session, str)
    assert (await c.submit("a 😀 b")).turn == "t-1"


async def test_a_cwd_that_does_not_exist_is_named_as_the_cause(home: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    c = Client(SIM, cwd=str(missing), env=sim_env(home))
    try:
        e = await raises(c.probe())
    finally:
        await c.close()
    assert e.code == "spawn_failed"
    assert str(missing) in str(e) and "working directory" in str(e), str(e)
    # The system's words for a missing folder (ENOENT; on Windows ERROR_FILE_NOT_FOUND, ERROR_PATH_NOT_FOUND or ERROR_DIRECTORY).
    if sys.platform == "win32":
        assert re.search(r"\(os error (2|3|267)\)", str(e)), str(e)
    else:
        assert "No such file or directory" in str(e), str(e)


# ---------------------------------------------------------------- signals after the reap


@pytest.fixture(scope="module")
def signal_shim() -> Any:
    """The LD_PRELOAD shim of the Node tests that logs kill, waitid and waitpid."""
    cc = os.environ.get("CC") or shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler for the signal-log shim")
    with tempfile.TemporaryDirectory(prefix="koma-signal-log-") as d:
        shim = Path(d) / "signal-log.so"
        subprocess.run(
            [cc, "-shared", "-fPIC", "-O1", "-o", str(shim), str(ROOT / "__test__" / "peers" / "signal-log.c"), "-ldl"],
            check=True,
        )
        yield Path(d), shim


SCENARIOS = [
    ("exits by itself", "spawn_tool,exit_mid_request", "await code(c.state())"),
    ("detached by close()", "spawn_tool", "await c.state()"),
    (
        "stopped with SIGKILL after ignoring everything",
        "spawn_tool,ignore_detach,ignore_eof,ignore_sigterm",
        "await c.state()",
    ),
]


@pytest.mark.parametrize("spawn", ["default", "no-pidfd", "portable"])
@pytest.mark.parametrize(("what", "faults", "body"), SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_kos_group_is_never_signalled_after_koma_was_reaped(
    signal_shim: Any, home: Path, spawn: str, what: str, faults: str, body: str
) -> None:
    d, shim = signal_shim
    log = d / f"log-{spawn}-{faults}"
    env = {"LD_PRELOAD": str(shim), "SIGNAL_LOG": str(log)}
    if spawn != "default":
        env["KOMA_SDK_SPAWN"] = spawn
    r = run_python(
        f"""
import asyncio
async def code(call):
    try:
        await call
    except KomaError as e:
        return e.code
async def main():
    c = Client(SIM, env={sim_env(home, faults=faults)!r})
    await c.probe()
    print(json.dumps({{"me": os.getpid(), "pid": c.pid}}), flush=True)
    {body}
    await c.close()
asyncio.run(main())
""",
        env=env,
    )
    assert r.returncode == 0, r.stderr
    me, pid = last_json(r.stdout)["me"], last_json(r.stdout)["pid"]
    calls = [line.split(" ") for line in log.read_text().strip().splitlines()]
    calls = [f for f in calls if int(f[0]) == me]  # this interpreter's calls (koma-sim's have its pid)
    shown = "\n".join(" ".join(f) for f in calls)
    wnowait = 0x01000000
    reap_at = next(
        (
            i
            for i, f in enumerate(calls)
            if (f[1] == "waitid" and f[2] == "1" and int(f[3]) == pid and int(f[4]) & wnowait == 0 and f[5] == "0")
            or (f[1] == "waitpid" and int(f[2]) == pid and int(f[4]) == pid)
        ),
        -1,
    )
    label = f"{what} ({spawn})"
    assert reap_at >= 0, f"{label}: koma was reaped\n{shown}"
    signals = [(f, i) for i, f in enumerate(calls) if f[1] == "kill" and abs(int(f[2])) == pid and f[3] != "0"]
    assert any(int(f[2]) == -pid and i < reap_at for f, i in signals), (
        f"{label}: the group was stopped while koma was unreaped\n{shown}"
    )
    assert [" ".join(f) for f, i in signals if i > reap_at] == [], f"{label}: signals after the reap\n{shown}"
    assert not group_running(pid), f"{label}: nothing of koma's group runs"
