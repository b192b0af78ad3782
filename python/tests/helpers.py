"""Shared helpers of the Python tests: every test drives a real child,
koma-sim unless it says otherwise. Process and descriptor checks read /proc
(on Windows, whether a process runs is asked of Windows; a test of what only
/proc shows skips there: `UNIX_ONLY`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, get_args

import anyio
import pytest

import koma_sdk
import koma_sdk.sim
from koma_sdk import Client, KomaError

ROOT = Path(__file__).resolve().parents[2]
TESTS = Path(__file__).resolve().parent
PEERS = TESTS / "peers"

# The event loops every async test runs under. KOMA_SDK_TEST_LOOPS (a comma
# list) keeps some of them: trio cannot start under wine (its Windows I/O
# asks for SIO_BASE_HANDLE, which wine lacks), where the suite runs in
# asyncio only (scripts/platforms/wine.mjs).
LOOPS = [b for b in os.environ.get("KOMA_SDK_TEST_LOOPS", "asyncio,trio").split(",") if b]
#: Only trio, where it runs.
TRIO = [b for b in LOOPS if b == "trio"]

# An npm shim of a script (cmd-shim's format, as `npm install -g` writes one), run by `python`.
_SHIM = "\r\n".join(
    [
        "@ECHO off",
        "GOTO start",
        ":find_dp0",
        "SET dp0=%~dp0",
        "EXIT /b",
        ":start",
        "SETLOCAL",
        "CALL :find_dp0",
        "",
        'IF EXIST "%dp0%\\python.exe" (',
        '  SET "_prog=%dp0%\\python.exe"',
        ") ELSE (",
        '  SET "_prog=python"',
        "  SET PATHEXT=%PATHEXT:;.JS;=;%",
        ")",
        "",
        'endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & "%_prog%"  "%dp0%\\{script}" %*',
        "",
    ]
)


def peer(name: str) -> str:
    """The executable of the peer script `name` of peers/: the script itself
    (its `#!` line) on Unix; on Windows, which runs no script as a program,
    an npm shim of it beside it, which the client reads and runs with
    `python` from PATH (docs/windows.md, "Batch files")."""
    script = PEERS / name
    if sys.platform != "win32":
        return str(script)
    shim = script.with_suffix(".cmd")
    text = _SHIM.replace("{script}", name)
    if not shim.exists() or shim.read_text() != text:
        tmp = shim.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, newline="")
        try:
            os.replace(tmp, shim)
        except OSError:
            if not shim.exists():
                raise
    return str(shim)


def _sim_path() -> str:
    """koma-sim: this checkout's build (it has the switches these tests use),
    else the one koma_sdk.sim finds (KOMA_SIM_PATH, or the package's own)."""
    local = ROOT / "bin" / ("koma-sim.exe" if sys.platform == "win32" else "koma-sim")
    if local.exists():
        return str(local)
    return koma_sdk.sim.path()


SIM = _sim_path()

MAX_FRAME = 41_943_040
QUOTE_BYTES = 200
# The event catalog and the error codes, as the package spells them (the
# names are docs/protocol.md's; tests below check each one's behaviour).
CATALOG = {cls.name for cls in get_args(koma_sdk.Event)}
# The codes whose "anything written?" column in docs/protocol.md (Error codes) says "no".
NOT_WRITTEN = set(get_args(koma_sdk.ErrorCode)) - {"remote", "delivery_unknown", "aborted", "timeout"}


# The `sim_client` fixture (conftest.py): koma-sim clients closed when their test ends.
MakeClient = Callable[..., Client]


def sim_env(home: Path | str, *, faults: str | Iterable[str] = (), delay_ms: int = 0, **more: str) -> dict[str, str]:
    """koma-sim's environment: a session home, a pace, fault switches."""
    fault = faults if isinstance(faults, str) else ",".join(faults)
    env = {"KOMA_SIM_HOME": str(home), "KOMA_SIM_DELAY_MS": str(delay_ms)}
    if fault:
        env["KOMA_SIM_FAULT"] = fault
    env.update(more)
    return env


async def raises(call: Awaitable[Any]) -> KomaError:
    """Await a call that must fail with a KomaError, and return the error."""
    try:
        value = await call
    except KomaError as e:
        return e
    raise AssertionError(f"expected a KomaError, got {value!r}")


async def code_of(call: Awaitable[Any]) -> str:
    """How a call settles: "answered", or its error's code."""
    try:
        await call
    except KomaError as e:
        return str(e.code)
    return "answered"


def is_event(item: Any, name: str | None = None) -> bool:
    return bool(item.type == "event" and (name is None or item.name == name))


def finished(turn: str) -> Callable[[Any], bool]:
    return lambda e: is_event(e, "turn_finished") and e.data["turn"] == turn


def names(items: Iterable[Any]) -> list[str]:
    return [e.name for e in items if e.type == "event"]


# A bound on waiting for events that must come: it stops a hang (a test
# fails instead of hanging the run); it is no measure of speed.
HANG = 20.0


async def events_until(client: Client, until: Callable[[Any], bool], limit: int = 100_000) -> list[Any]:
    """Take events until `until(item)` holds; all taken, the match last."""
    seen: list[Any] = []
    with anyio.fail_after(HANG):
        async for item in client.events():
            seen.append(item)
            if until(item):
                return seen
            if len(seen) >= limit:
                raise AssertionError(f"no matching event in {limit}")
    raise AssertionError(f"events ended before a match; the last ones: {seen[-5:]!r}")


async def events_error(client: Client) -> tuple[BaseException | None, list[Any]]:
    """Iterate the events to their end: the error they end with (None if
    they just end), and the items taken before it."""
    items: list[Any] = []
    try:
        with anyio.fail_after(HANG):
            async for item in client.events():
                items.append(item)
    except TimeoutError:
        raise AssertionError(f"events() neither ended nor failed within {HANG} s; taken: {items[-5:]!r}") from None
    except Exception as e:  # noqa: BLE001 - the caller checks what it is
        return e, items
    return None, items


def assert_contiguous(events: list[Any]) -> None:
    for a, b in zip(events, events[1:], strict=False):
        assert b.seq == a.seq + 1, f"seq not contiguous: {a.seq} then {b.seq}"


def assert_catalog_event(item: Any) -> None:
    assert item.type == "event", f"not an event: {item!r}"
    assert item.name in CATALOG, f"an event outside the catalog was yielded: {item!r}"
    assert type(item.seq) is int and item.seq > 0, f"bad seq: {item!r}"


# ---------------------------------------------------------------- processes


def _windows_running(pid: int) -> bool:
    """Windows: whether `pid` runs (its exit code is STILL_ACTIVE). os.kill
    cannot ask there: any signal it sends ends the process."""
    import ctypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined,unused-ignore]
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return ctypes.get_last_error() == 5  # ERROR_ACCESS_DENIED: someone else's, running
    try:
        code = ctypes.c_ulong()
        return bool(kernel32.GetExitCodeProcess(handle, ctypes.byref(code))) and code.value == 259  # STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)


def alive(pid: int) -> bool:
    """Does `pid` exist (a zombie counts; Windows has none: whether it runs)?"""
    if sys.platform == "win32":
        return _windows_running(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def linux_proc(what: str) -> None:
    """Skip the test where Linux's /proc is missing (it reads `what` there).
    What such a test checks of the child, the Windows row checks on Windows
    (scripts/platforms/wine.mjs) and the portable spawn path on Linux."""
    if sys.platform != "linux":
        pytest.skip(f"reads {what} in Linux's /proc")


#: A test of koma-sim's `hold`, whose answers SIGUSR1 releases: koma-sim.exe refuses it.
NEEDS_SIGUSR1 = pytest.mark.skipif(
    sys.platform == "win32", reason="koma-sim's `hold` is released by SIGUSR1, and Windows has no signals"
)


def kill_hard(pid: int) -> None:
    """Kill `pid` at once: SIGKILL; on Windows TerminateProcess with exit
    code 1, as a kill from outside (Node's kill(), koma-sim's kill_mid_request)."""
    if sys.platform != "win32":
        import signal

        os.kill(pid, signal.SIGKILL)
        return
    import ctypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined,unused-ignore]
    handle = kernel32.OpenProcess(0x0001, False, pid)  # PROCESS_TERMINATE (os.kill asks for every right)
    if not handle:
        raise ctypes.WinError(ctypes.get_last_error())  # type: ignore[attr-defined,unused-ignore]
    try:
        if not kernel32.TerminateProcess(handle, 1):
            raise ctypes.WinError(ctypes.get_last_error())  # type: ignore[attr-defined,unused-ignore]
    finally:
        kernel32.CloseHandle(handle)


#: What a scenario's SIGKILL is on Windows, which has no signals: exit code 1 (docs/koma-sim.md, "On Windows").
WINDOWS_KILL_EXIT = 1


#: A test of fork(), which Windows does not have.
NEEDS_FORK = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork() is Unix's: Windows has no fork")


def _state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split(" ")[0]


def running(pid: int) -> bool:
    """Is `pid` running (a zombie, waiting for its reaper, counts as gone)?"""
    if sys.platform == "win32":
        return _windows_running(pid)
    state = _state(pid)
    return state is not None and state not in ("Z", "X")


def child_pids() -> list[int]:
    """The processes this process started and has not reaped, from every thread."""
    linux_proc("this process's children")
    pids: list[int] = []
    for tid in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            text = Path(f"/proc/{os.getpid()}/task/{tid}/children").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        pids.extend(int(p) for p in text.split())
    return sorted(pids)


def open_fds() -> list[str]:
    """This process's open descriptors, as "fd -> target" lines, but for the
    one glibc opens for a moment on a thread that is ending (it reads
    /proc/sys/vm/overcommit_memory as it gives back the thread's heap): not
    a client's, and gone by itself."""
    linux_proc("this process's descriptors")
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the descriptor of the listing itself, closed meanwhile
        if target != "/proc/sys/vm/overcommit_memory":
            out.append(f"{fd} -> {target}")
    return sorted(out)


def thread_count() -> int:
    linux_proc("this process's threads")
    return len(os.listdir("/proc/self/task"))


def group_running(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs (a zombie counts as gone)."""
    linux_proc("the processes of a group")
    return bool(group_members([pgid])[pgid])


def reaped(pid: int) -> bool:
    """Gone and reaped: no such process at all, not even a zombie."""
    return not alive(pid)


def wait_gone(pids: Iterable[int], what: str, seconds: float = 30.0) -> None:
    """Wait, blocking, until none of `pids` runs: processes of another
    process (or orphans), whose end this one cannot await. Bounded."""
    import time

    pids = list(pids)
    end = time.monotonic() + seconds
    while any(running(p) for p in pids):
        if time.monotonic() > end:
            raise AssertionError(f"{what}: still running: {[p for p in pids if running(p)]}")
        time.sleep(0.025)


def wait_reaped(pids: Iterable[int], what: str, seconds: float = 30.0) -> None:
    """Wait, blocking, until none of `pids` exists (not even a zombie): this
    process's children, stopped by a client that was collected, which the
    core reaps on its own thread. Bounded."""
    import time

    pids = list(pids)
    end = time.monotonic() + seconds
    while any(alive(p) for p in pids):
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not reaped: {[p for p in pids if alive(p)]}")
        time.sleep(0.025)


def spawn_env(spawn: str) -> dict[str, str]:
    """The environment that picks a spawn path (`default`: the best the system has)."""
    env = {k: v for k, v in os.environ.items() if k != "KOMA_SDK_SPAWN"}
    if spawn != "default":
        env["KOMA_SDK_SPAWN"] = spawn
    return env


def _linux_at_least(major: int, minor: int) -> bool:
    if sys.platform != "linux":
        return False
    a, b = (int(x) for x in os.uname().release.split(".")[:2])
    return (a, b) >= (major, minor)


def exit_watched_by_thread(spawn: str | None = None) -> bool:
    """Whether each child's exit is watched by a thread of its own on a spawn
    path (the one in use unless given), from what the platform gives: the
    reactor watches it through a pidfd (Linux 5.3 and later) or a kqueue
    (macOS), except on the `no-pidfd` path."""
    spawn = spawn if spawn is not None else os.environ.get("KOMA_SDK_SPAWN", "default")
    if spawn == "no-pidfd":
        return True
    if sys.platform == "darwin":
        return False
    return not _linux_at_least(5, 3)


def lacks_parent_death() -> str | None:
    """A skip's reason where this platform lacks what the death of koma's
    group with its parent needs (process groups, and /bin/sh for the guard)."""
    if sys.platform == "win32":
        return "Windows has no process groups or /bin/sh for the guard"
    if not os.path.exists("/bin/sh"):
        return "this system has no /bin/sh for the guard"
    return None


def group_members(pgids: Iterable[int]) -> dict[int, list[int]]:
    """The running processes of each group of `pgids` (zombies left out), from /proc."""
    groups: dict[int, list[int]] = {g: [] for g in pgids}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split(" ")
        if int(fields[2]) in groups and fields[0] not in ("Z", "X"):
            groups[int(fields[2])].append(int(d))
    return groups


def killed_with_sigkill(src: str, *, spawn: str, bound: float = 30.0) -> list[int]:
    """Run `src` in a new interpreter (on the spawn path `spawn`) that holds
    the write end of a pipe to this process (inheritable), which
    everything it starts inherits: koma, koma's tools, the guard. The script
    prints a JSON list of koma pids once they run. Each koma's group (koma and
    its tool) is checked to run; the interpreter is killed with SIGKILL; this
    returns once the pipe reads its end, that is once every process that held
    it is gone: no polling, the end of file is the event. `bound` only stops
    a hang, and then names what still runs. Returns every pid that ran."""
    import selectors

    r, w = os.pipe()
    p = subprocess.Popen(
        [sys.executable, "-c", src], stdout=subprocess.PIPE, text=True, pass_fds=(w,), env=spawn_env(spawn)
    )
    os.close(w)
    try:
        try:
            komas = [int(x) for x in json.loads(first_line(p, seconds=120))]
            groups = group_members(komas)
            for koma, members in groups.items():
                assert koma in members and len(members) >= 2, f"koma {koma} and its tool run: {members}"
        finally:
            p.kill()
            p.wait()
            assert p.stdout is not None
            p.stdout.close()
        ran = sorted(pid for members in groups.values() for pid in members)
        with selectors.DefaultSelector() as sel:
            sel.register(r, selectors.EVENT_READ)
            if not sel.select(bound):
                left = [pid for pid in ran if running(pid)]
                for pid in left:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                raise AssertionError(f"{bound} s after the SIGKILL, still running: {left} of {ran}")
        assert os.read(r, 1) == b"", "nothing writes to the pipe"
        return ran
    finally:
        os.close(r)


async def until(cond: Callable[[], bool], what: str, seconds: float = 20.0) -> None:
    """Poll a condition of another process (its end, its stderr) that no
    client event announces. Bounded: fails with `what`."""
    with anyio.move_on_after(seconds):
        while not cond():
            await anyio.sleep(0.02)
        return
    raise AssertionError(f"gave up waiting for {what}")


# ---------------------------------------------------------------- child interpreters

PRELUDE = f"""
import sys, os, json
sys.path[:0] = {json.dumps([str(TESTS)])}
from koma_sdk import Client, KomaError
SIM = {json.dumps(SIM)}
"""


# How a script runs its `main()` under each event loop, and waits forever in it.
RUN_MAIN = {"asyncio": "import asyncio\nasyncio.run(main())", "trio": "import trio\ntrio.run(main)"}
FOREVER = {"asyncio": "await asyncio.Event().wait()", "trio": "await trio.sleep_forever()"}


def script(body: str) -> str:
    """A Python script: the prelude (koma_sdk, SIM), then `body`."""
    return PRELUDE + "\n" + body


def run_python(
    body: str, *, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run a script in a new interpreter; its exit code, stdout and stderr.
    The timeout only stops a hang; it is no measure of speed."""
    return subprocess.run(
        [sys.executable, "-c", script(body)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


def first_line(p: subprocess.Popen[str], seconds: float = 60) -> str:
    """The first line a child interpreter prints; kills it and fails if none
    comes (a bound against a hang, not a measure)."""
    import selectors

    assert p.stdout is not None
    if sys.platform == "win32":
        # Windows selects sockets only: the pipe is read by a thread, with the same bound.
        import threading

        got: list[str] = []
        reader = threading.Thread(target=lambda: got.append(p.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(seconds)
        if reader.is_alive():
            p.kill()
            p.wait()
            raise AssertionError(f"the child printed nothing within {seconds} s")
        line = got[0]
        if not line:
            p.wait()
            raise AssertionError(f"the child ended ({p.returncode}) without printing")
        return line
    with selectors.DefaultSelector() as sel:
        sel.register(p.stdout, selectors.EVENT_READ)
        if not sel.select(seconds):
            p.kill()
            p.wait()
            raise AssertionError(f"the child printed nothing within {seconds} s")
    line = p.stdout.readline()
    if not line:
        p.wait()
        raise AssertionError(f"the child ended ({p.returncode}) without printing")
    return line


def last_json(out: str) -> Any:
    return json.loads(out.strip().splitlines()[-1])
