"""Processes and failures: a panic in the core, threads with loops of their
own, the death of the Python process, collection, interpreter exit, fork,
tracing, hostile children (the twin of reliability.test.mjs)."""

from __future__ import annotations

import gc
import glob
import os
import re
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import koma_sdk
from helpers import (
    FOREVER,
    LOOPS,
    NEEDS_FORK,
    NOT_WRITTEN,
    PEERS,
    RUN_MAIN,
    SIM,
    MakeClient,
    alive,
    child_pids,
    events_error,
    exit_watched_by_thread,
    killed_with_sigkill,
    lacks_parent_death,
    last_json,
    linux_proc,
    peer,
    raises,
    run_python,
    script,
    sim_env,
    until,
    wait_gone,
    wait_reaped,
)
from koma_sdk import Client, KomaError

pytestmark = pytest.mark.anyio


def run_loop(loop: str, main: Any) -> Any:
    """Run `main()` to its end on a new event loop of this thread."""
    if loop == "asyncio":
        import asyncio

        return asyncio.run(main())
    import trio

    return trio.run(main)


# ---------------------------------------------------------------- a panic in the core


def test_the_published_package_has_no_test_hooks(home: Path) -> None:
    # The core injects faults only in a build with its `testing` feature,
    # which no wheel has: with every variable the tests of the Node package
    # use set, a round trip works (a panic in the core is tested in Rust,
    # crates/koma-transport/tests/faults.rs).
    r = run_python(
        f"""
import asyncio
async def main():
    c = Client(SIM, env={sim_env(home)!r})
    hello = await c.probe()
    created = await c.create()
    states = await asyncio.gather(c.state(), c.state(), c.state())
    await c.close()
    print(hello.protocol, created.state.status, [s.status for s in states])
asyncio.run(main())
""",
        env={"KOMA_SDK_TEST_PANIC": "reader", "KOMA_SDK_TEST_NAPI_FAIL": "parse:1"},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "1 idle ['idle', 'idle', 'idle']", r.stdout


# ---------------------------------------------------------------- threads


@pytest.mark.parametrize("loop", LOOPS)
def test_threads_with_loops_of_their_own_use_clients_at_once(home: Path, loop: str) -> None:
    def work(_: int) -> tuple[int, int]:
        async def main() -> tuple[int, int]:
            c = Client(SIM, env=sim_env(home))
            ok = 0
            for _ in range(200):
                ok += (await c.state()).status == "idle"
            pid = c.pid
            assert pid is not None
            await c.close()
            return ok, pid

        return run_loop(loop, main)  # type: ignore[no-any-return]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(4)))
    assert [ok for ok, _ in results] == [200] * 4
    assert not any(alive(pid) for _, pid in results), "every child is gone and reaped"


@pytest.mark.parametrize("loop", LOOPS)
def test_a_loop_that_ends_with_calls_in_flight_leaves_no_koma_once_collected(home: Path, loop: str) -> None:
    before = child_pids()
    box: dict[str, int] = {}

    def thread() -> None:
        async def main() -> None:
            c = Client(SIM, env=sim_env(home, faults="never_answer"))
            await c.probe()
            assert c.pid is not None
            box["pid"] = c.pid
            if loop == "asyncio":
                import asyncio

                for _ in range(10):
                    asyncio.ensure_future(c.state())  # cancelled when asyncio.run ends
            else:
                import trio

                with trio.move_on_after(0.05):
                    async with trio.open_nursery() as nursery:
                        for _ in range(10):
                            nursery.start_soon(c.state)  # cancelled when the deadline passes

        run_loop(loop, main)

    t = threading.Thread(target=thread)
    t.start()
    t.join()
    gc.collect()
    # Stopped at the collection, reaped by the core: not even a zombie stays.
    wait_reaped([box["pid"]], "koma after its loop ended and its client was collected")
    assert child_pids() == before


# ---------------------------------------------------------------- the end of the Python process


@pytest.mark.skipif(lacks_parent_death() is not None, reason=str(lacks_parent_death()))
@pytest.mark.parametrize("spawn", ["default", "no-pidfd", "portable"])
@pytest.mark.parametrize("loop", LOOPS)
def test_a_sigkilled_python_leaves_neither_koma_nor_the_tool_in_its_group(home: Path, loop: str, spawn: str) -> None:
    # koma-sim ignores the end of its stdin, and has a tool in its group.
    src = script(f"""
async def main():
    c = Client(SIM, env={sim_env(home, faults="ignore_eof,spawn_tool")!r})
    await c.create()
    print(json.dumps([c.pid]), flush=True)
    {FOREVER[loop]}
{RUN_MAIN[loop]}
""")
    ran = killed_with_sigkill(src, spawn=spawn)
    assert len(ran) == 2, f"koma and its tool: {ran}"


@pytest.mark.parametrize("loop", LOOPS)
def test_an_interpreter_that_exits_without_closing_leaves_no_koma(home: Path, loop: str) -> None:
    r = run_python(
        f"""
async def main():
    c = Client(SIM, env={sim_env(home)!r})
    await c.create()
    print(c.pid, flush=True)
{RUN_MAIN[loop]}
""",
        timeout=60,  # a hang guard, not a measure
    )
    assert r.returncode == 0, r.stderr
    pid = int(r.stdout.strip())
    wait_gone([pid], "koma after its interpreter exited")


@pytest.mark.parametrize("loop", LOOPS)
def test_an_interpreter_that_exits_with_a_client_in_a_global_leaves_no_koma(home: Path, loop: str) -> None:
    # A module global is collected late in the interpreter's shutdown, if at all.
    r = run_python(
        f"""
KEEP = []
async def main():
    c = Client(SIM, env={sim_env(home)!r})
    KEEP.append(c)
    await c.create()
    print(c.pid, flush=True)
{RUN_MAIN[loop]}
""",
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    wait_gone([int(r.stdout.strip())], "koma after its interpreter exited")


async def test_a_client_never_closed_is_stopped_when_collected(home: Path) -> None:
    before = child_pids()

    async def make() -> int:
        c = Client(SIM, env=sim_env(home))
        await c.create()
        assert c.pid is not None
        return c.pid

    pid = await make()
    gc.collect()
    await until(lambda: not alive(pid), "koma to be stopped and reaped after its client was collected")
    assert child_pids() == before


# ---------------------------------------------------------------- fork

FORK_CHILD = """
import threading

def in_thread(main):
    box = {}
    def target():
        try:
            box["value"] = run(main)
        except BaseException as e:
            box["value"] = {"error": repr(e)}
    t = threading.Thread(target=target)
    t.start()
    t.join()
    return box["value"]

def run(main):
    LOOP_RUN

def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True

def child_work(inherited, new):
    async def main():
        out = {}
        if inherited is not None:
            try:
                await inherited.state()
                out["inherited"] = ["answered", ""]
            except KomaError as e:
                out["inherited"] = [e.code, str(e)]
            except BaseException as e:
                out["inherited"] = ["not a KomaError", repr(e)]
        if not new:
            return out
        c = Client(SIM, env=ENV)
        await c.create()
        turn = (await c.submit("hello")).turn
        async for e in c.events():
            if e.type == "event" and e.name == "turn_finished" and e.data["turn"] == turn:
                out["status"] = e.data["status"]
                break
        pid = c.pid
        await c.close()
        out["gone"] = not alive(pid)
        return out
    return in_thread(main)
"""

LOOP_RUNS = {"asyncio": "import asyncio; return asyncio.run(main())", "trio": "import trio; return trio.run(main)"}


def fork_script(loop: str, env: dict[str, str], parent_body: str) -> str:
    return (
        f"ENV = {env!r}\n"
        + FORK_CHILD.replace("LOOP_RUN", LOOP_RUNS[loop])
        + f"""
async def main():
    c = Client(SIM, env=ENV)
    await c.create()
    pid = c.pid
{parent_body}
    st = await c.state()
    out["parent"] = {{"status": st.status, "same_pid": c.pid == pid, "alive": alive(pid)}}
    await c.close()
    out["parent_gone"] = not alive(pid)
    print(json.dumps(out))
{RUN_MAIN[loop]}
"""
    )


def os_fork(new: bool) -> str:
    """The parent's part: fork; the child uses the inherited client (and a
    new one, if `new`), reports through a pipe, and drops the inherited one."""
    return f"""
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        import signal
        signal.alarm(30)  # a hang in the child ends it (and its koma) instead of lingering
        os.close(r)
        out = child_work(c, {new})
        del c  # the inherited client is collected in the child: the parent's koma stays
        import gc
        gc.collect()
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        text = f.read()  # blocks this loop: nothing else runs meanwhile
    _, status = os.waitpid(child, 0)
    out = {{"child": json.loads(text) if text else {{"error": "no report"}}, "child_exit": status}}
"""


MP_FORK = """
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    q = ctx.SimpleQueue()
    def target():
        import signal
        signal.alarm(30)  # a hang in the child ends it (and its koma) instead of lingering
        q.put(child_work(None, True))
    p = ctx.Process(target=target)
    p.start()
    p.join()  # blocks this loop: nothing else runs meanwhile
    out = {"child": q.get() if p.exitcode == 0 else {"error": "no report"}, "child_exit": p.exitcode}
"""


def run_fork(loop: str, home: Path, parent_body: str) -> Any:
    """Run a fork script: the child's report, after the checks every fork
    case shares (the child exited 0; the parent's client still answers, its
    koma untouched, and is gone after close)."""
    r = run_python(fork_script(loop, sim_env(home), parent_body))
    assert r.returncode == 0, r.stderr
    out = last_json(r.stdout)
    assert out["child_exit"] == 0, out
    assert out["parent"] == {"status": "idle", "same_pid": True, "alive": True}, out
    assert out["parent_gone"] is True
    return out


# The core's I/O runtime is not made anew in a child of fork() yet
# (runtime::generation() is still 0): a new client there never gets its hello.
@NEEDS_FORK
@pytest.mark.parametrize("loop", LOOPS)
def test_after_fork_the_parents_client_fails_clearly_in_the_child_and_stays_untouched(home: Path, loop: str) -> None:
    child = run_fork(loop, home, os_fork(False))["child"]
    code, message = child["inherited"]
    assert code in NOT_WRITTEN, f"the parent's client in the child: {code} {message}"
    assert "fork" in message, f"the error says why: {message}"


@NEEDS_FORK
@pytest.mark.parametrize("loop", LOOPS)
def test_after_fork_a_client_made_in_the_child_works(home: Path, loop: str) -> None:
    child = run_fork(loop, home, os_fork(True))["child"]
    assert "error" not in child, child
    assert (child["status"], child["gone"]) == ("completed", True), child
    assert child["inherited"][0] in NOT_WRITTEN, child


@NEEDS_FORK
@pytest.mark.parametrize("loop", LOOPS)
def test_multiprocessing_with_fork_a_client_in_the_child_works(home: Path, loop: str) -> None:
    out = run_fork(loop, home, MP_FORK)
    assert out["child"] == {"status": "completed", "gone": True}, out


# ---------------------------------------------------------------- the core's threads

# Counted in a new interpreter, where no other test's client (nor
# pytest-timeout's thread) runs: by name, from /proc/self/task, right after
# the awaited call returns.
THREADS = """
import multiprocessing
import warnings

def koma_threads():
    names = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass  # ended meanwhile
    return sorted(n for n in names if n.startswith("koma-"))

async def threads_main():
    out = {"before": koma_threads()}
    c = Client(SIM, env=ENV)
    out["made"] = koma_threads()
    await c.state()
    out["running"] = koma_threads()
    await c.close()
    out["closed"] = koma_threads()
    await c.close()
    out["closed_twice"] = koma_threads()
    # The last client's close() and a new client's first call at once.
    a = Client(SIM, env=ENV)
    await a.state()
    out["rounds"] = []
    for _ in range(20):
        b = Client(SIM, env=ENV)
        async def first_call():
            await b.state()
        await both(a.close, first_call)
        out["rounds"].append(koma_threads())
        a = b
    await a.close()
    out["last"] = koma_threads()
    out["threads"] = len(os.listdir("/proc/self/task"))
    # Python 3.12+ warns at each fork if the process has another thread (a
    # warning it drops under -W error, so it is recorded here).
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        child = os.fork()
        if child == 0:
            os._exit(0)
        out["fork"] = os.waitpid(child, 0)[1]
        p = multiprocessing.get_context("fork").Process(target=int)
        p.start()
        p.join()
        out["multiprocessing"] = p.exitcode
    out["warned"] = [str(w.message) for w in warned]
    print(json.dumps(out))
"""

BOTH = {
    "asyncio": """
import asyncio
async def both(f, g):
    await asyncio.gather(f(), g())
def run_threads_main():
    asyncio.run(threads_main())
""",
    "trio": """
import trio
async def both(f, g):
    async with trio.open_nursery() as n:
        n.start_soon(f)
        n.start_soon(g)
def run_threads_main():
    trio.run(threads_main)
""",
}


def check_threads(r: subprocess.CompletedProcess[str]) -> None:
    assert r.returncode == 0, r.stderr
    out = last_json(r.stdout)
    # Where the reactor cannot watch a child's exit, a thread of its own watches it.
    watched = exit_watched_by_thread()
    running = sorted(["koma-io", "koma-io", "koma-spawner"] + (["koma-exit-watch"] if watched else []))
    assert (out["before"], out["made"]) == ([], []), f"nothing starts before the first call: {out}"
    assert out["running"] == running, out
    assert (out["closed"], out["closed_twice"]) == ([], []), f"right after close() returned: {out}"
    for i, names in enumerate(out["rounds"]):
        assert names == running, f"round {i}: the new client's threads, and no other: {names}"
    assert out["last"] == [], f"right after the last close() returned: {out}"
    assert out["threads"] == 1, f"the process has only its main thread: {out}"
    assert (out["fork"], out["multiprocessing"]) == (0, 0), out
    assert out["warned"] == [], "no warning at fork (Python 3.12+ warns when the process has other threads)"


@pytest.mark.parametrize("loop", LOOPS)
def test_no_thread_of_the_core_is_left_after_the_last_close_and_they_start_again(home: Path, loop: str) -> None:
    linux_proc("this process's threads, by name")
    r = run_python(f"ENV = {sim_env(home)!r}\n" + THREADS + BOTH[loop] + "run_threads_main()\n")
    check_threads(r)


def python_312() -> str | None:
    """An interpreter of Python 3.12 or later (where os.fork() warns when the
    process has other threads), if this machine has one (pyenv's)."""
    if sys.version_info >= (3, 12):
        return sys.executable
    found = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3")))
    return found[0] if found else None


@NEEDS_FORK
def test_fork_after_the_last_close_does_not_warn_on_python_312(home: Path, tmp_path: Path) -> None:
    py = python_312()
    if py is None:
        pytest.skip("no Python 3.12 or later here: os.fork()'s warning about threads is 3.12's")
    # This package as installed (an abi3 module, so any 3.10+ imports it), alone on the path.
    shutil.copytree(Path(koma_sdk.__file__).parent, tmp_path / "pkg" / "koma_sdk")
    body = f"ENV = {sim_env(home)!r}\n" + THREADS + BOTH["asyncio"] + "run_threads_main()\n"
    r = subprocess.run(
        [py, "-c", script(body)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path / "pkg")},
        timeout=120,
    )
    check_threads(r)


# ---------------------------------------------------------------- environment, arguments


# Tracing: test_logging.py (the trace goes to the package's loggers, never to fd 2 by itself).


async def test_the_childs_environment_is_the_parents_plus_env_and_its_arguments_sdk_serve(
    sim_client: MakeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    linux_proc("the child's environment and arguments")
    monkeypatch.setenv("KOMA_SDK_TEST_PARENT_VAR", "from-parent")
    c = sim_client(env={"KOMA_SDK_TEST_ADDED": "added $(echo no-shell)"})
    await c.probe()
    environ = Path(f"/proc/{c.pid}/environ").read_bytes().decode().split("\0")
    cmdline = Path(f"/proc/{c.pid}/cmdline").read_bytes().decode().split("\0")
    assert "KOMA_SDK_TEST_PARENT_VAR=from-parent" in environ
    assert "KOMA_SDK_TEST_ADDED=added $(echo no-shell)" in environ
    assert cmdline[1:3] == ["sdk", "serve"] and cmdline[3:] == [""]
    shell = Client("echo hi; true")
    try:
        assert (await raises(shell.probe())).code == "spawn_failed", "the executable is a path, never a shell command"
    finally:
        await shell.close()


# ---------------------------------------------------------------- hostile children


@pytest.mark.parametrize("events_mib", [63, 400])
def test_a_hostile_child_cannot_make_the_client_use_more_than_the_bounds(events_mib: int) -> None:
    linux_proc("the peak memory (VmHWM)")
    # 40 MiB frame + 64 MiB events + 64 KiB stderr; slack for the read
    # buffer, the allocator, the runtime and the interpreter's own objects.
    bounds = 40 * 2**20 + 64 * 2**20 + 64 * 1024
    slack = 48 * 2**20
    r = run_python(
        f"""
import asyncio
def peak():
    return int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1)) * 1024
import re
async def main():
    open("/proc/self/clear_refs", "w").write("5")
    base = peak()
    c = Client({str(PEERS / "hostile.py")!r})
    await c.probe()
    it = c.events()
    try:
        await c.state()
        error = "answered"
    except KomaError as e:
        error = e.code
    first = None
    async def drain():
        nonlocal first
        async for item in it:
            if first is None:
                first = item.type
    try:
        await asyncio.wait_for(drain(), 60)  # a hang guard, not a measure
    except KomaError as e:
        error += "," + e.code
    except asyncio.TimeoutError:
        error += ",events() did not end"
    await c.close()
    print(json.dumps({{"peak": peak() - base, "error": error, "first": first, "stderr": len(c.stderr.encode())}}))
asyncio.run(main())
""",
        env={"HOSTILE_EVENTS_MIB": str(events_mib)},
    )
    assert r.returncode == 0, r.stderr
    out = last_json(r.stdout)
    assert out["error"] == "delivery_unknown,protocol_error", "the endless line is fatal at 40 MiB"
    assert out["stderr"] == 65536, "only the newest 64 KiB of the stderr flood is kept"
    assert out["first"] == ("overflow" if events_mib == 400 else "event")
    assert out["peak"] < bounds + slack, f"peak RSS growth {out['peak']} bytes with {events_mib} MiB of events"


async def test_messages_quoting_the_childs_bytes_escape_control_characters() -> None:
    c = Client(peer("escapes.py"))
    try:
        await c.probe()
        e = await raises(c.state())
        assert e.code == "delivery_unknown"
        fatal, _ = await events_error(c)
        assert isinstance(fatal, KomaError) and fatal.code == "protocol_error"
        for message in (str(e), str(fatal)):
            assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", message), f"a raw control character: {message!r}"
        assert "INFO" in str(fatal)
        assert "z" * 201 not in str(fatal), "at most 200 bytes of the line are quoted"
    finally:
        await c.close()
