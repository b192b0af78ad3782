import asyncio
import gc
import math
import os
import signal
import subprocess
import sys

import anyio
import pytest

from koma_sdk import Client, KomaError, Overflow
from koma_sdk.sim import path as sim_path

pytestmark = pytest.mark.anyio

# These ask whether a process runs with os.kill(pid, 0) and Linux's /proc: on
# Windows os.kill ends the process instead (the full suite checks the same there).
UNIX_ONLY = pytest.mark.skipif(
    sys.platform == "win32", reason="os.kill(pid, 0) and /proc are Unix's (on Windows os.kill ends the process)"
)


def open_fds():
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            out.append(f"{fd} -> {os.readlink(f'/proc/self/fd/{fd}')}")
        except OSError:
            pass
    return sorted(out)


async def test_probe_create_state(make_client):
    c = make_client()
    hello = await c.probe()
    assert hello.protocol == 1 and "submit" in hello.capabilities
    assert hello.binary.version
    r = await c.create()
    assert r.session.startswith("s-") and r.state.queued == 0
    st = await c.state()
    assert st.status == "idle" and st.session == r.session
    raw = await c.request("state")
    assert raw["status"] == "idle"
    await c.close()
    assert c.pid is None


@pytest.mark.parametrize("bad", [b"bytes", None, "a\ud800b", {1, 2}, math.nan])
async def test_bad_values_are_invalid_params(make_client, bad):
    c = make_client()
    await c.create()
    with pytest.raises(KomaError) as e:
        await c.submit(bad)
    assert e.value.code == "invalid_params"
    assert (await c.submit("next")).turn == "t-1", "nothing was written before"
    await c.close()


async def test_signature_errors_are_type_errors(make_client):
    c = make_client()
    with pytest.raises(TypeError):
        await c.submit("x", nope=1)
    with pytest.raises(KomaError) as e:
        Client(5)
    assert e.value.code == "invalid_params"
    with pytest.raises(KomaError):
        Client("koma", env={"A": 1})
    with pytest.raises(KomaError):
        Client("koma", hello_timeout=-1)
    await c.close()


async def test_timeout_and_cancel_free_the_slot(make_client):
    c = make_client("never_answer")
    await c.probe()
    with pytest.raises(KomaError) as e:
        await c.state(timeout=0.05)
    assert e.value.code == "timeout"
    for _ in range(70):  # more than the 64 pending slots: each cancelled call frees its own
        with anyio.move_on_after(0.01):
            await c.state()
    with pytest.raises(KomaError) as e:
        await c.state(timeout=0.05)
    assert e.value.code == "timeout", "not too_many_pending"
    await c.close()


async def test_events_and_run(make_client):
    c = make_client()
    await c.create()
    r = await c.run("hello", on_approval="deny")
    assert r.status == "completed" and r.events == 9
    assert r.output.startswith("Sim reply")
    seen = []
    async for item in c.events():
        seen.append(item)
        if item.name == "diagnostic":
            break
    assert seen[0].type == "event"
    turn = c.turn("fix notes.txt")
    names = []
    async for item in turn:
        names.append(item.name)
        if item.name == "approval_requested":
            await c.approve(item.data["approval"], "allow")
    assert names[0] == "turn_started" and names[-1] == "turn_finished"
    res = await turn.result()
    assert res.tool_calls[0].output.startswith("wrote")
    assert await turn.id() == res.turn
    await c.close()


async def test_handler_errors_deny_and_carry_the_cause(make_client):
    c = make_client()
    await c.create()
    boom = RuntimeError("the prompt crashed")

    def handler(_):
        raise boom

    with pytest.raises(KomaError) as e:
        await c.run("write notes.txt", on_approval=handler)
    assert e.value.code == "invalid_params"
    assert e.value.__cause__ is boom
    assert e.value.result is not None and e.value.result.tool_calls[0].approval == "deny"

    async def slow(request):
        await anyio.sleep(0.01)
        return "allow"

    r = await c.run("edit notes.txt", on_approval=slow)
    assert r.tool_calls[0].approval == "allow"
    await c.close()


async def test_run_timeout_interrupts(make_client):
    c = make_client()
    await c.create()
    with pytest.raises(KomaError) as e:
        await c.run("fix notes.txt", on_approval=lambda r: anyio.sleep(3600), timeout=0.05)
    assert e.value.code == "timeout"
    assert e.value.result.status == "interrupted"
    st = await c.state()
    assert st.status == "idle" and st.turn is None
    await c.close()


async def test_overflow(make_client):
    c = make_client("event_flood")  # 2,000 outputs before submit's answer
    await c.create()
    turn = c.turn("hello")
    items = [item async for item in turn]
    assert any(isinstance(i, Overflow) and i.dropped > 0 for i in items)
    r = await turn.result()
    assert r.overflowed and r.status in ("completed", "unknown")
    assert (await c.run("again", on_approval="allow")).status == "completed"
    await c.close()


@UNIX_ONLY
async def test_close_leaves_no_descriptor_and_no_child(make_client):
    before = open_fds()
    c = make_client()
    await c.create()
    pid = c.pid
    await c.close()
    assert open_fds() == before
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@UNIX_ONLY
async def test_collected_client_stops_its_child(make_client):
    c = Client(sim_path(), env={"KOMA_SIM_DELAY_MS": "0", "KOMA_SIM_HOME": "/tmp"})
    await c.probe()
    pid = c.pid
    del c
    gc.collect()
    for _ in range(200):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ")[1][0] == "Z":
                    break
        except (FileNotFoundError, ProcessLookupError):
            break  # reaped between the two looks
        await anyio.sleep(0.01)
    else:
        raise AssertionError("the child still runs")


@UNIX_ONLY
def test_interpreter_exit_without_close(tmp_path):
    script = f"""
import asyncio
from koma_sdk import Client
async def main():
    c = Client({sim_path()!r}, env={{"KOMA_SIM_HOME": {str(tmp_path)!r}}})
    await c.probe()
    print(c.pid, flush=True)
    globals()["kept"] = c
asyncio.run(main())
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    pid = int(out.stdout.strip())
    with pytest.raises(ProcessLookupError):
        for _ in range(100):
            os.kill(pid, 0)
            import time

            time.sleep(0.02)


@UNIX_ONLY
def test_fork_child_makes_its_own_client(tmp_path):
    env = {"KOMA_SIM_HOME": str(tmp_path), "KOMA_SIM_DELAY_MS": "0"}
    c = Client(sim_path(), env=env)
    asyncio.run(c.create())
    pid = os.fork()
    if pid == 0:
        code = 1
        signal.alarm(20)  # the core's deadlines are its own: bound the child from outside
        try:

            async def child():
                with pytest.raises(KomaError) as e:
                    await c.state()
                assert e.value.code == "transport_failure"
                async with Client(sim_path(), env=env) as d:
                    await d.probe(timeout=10)
                    await d.create()
                    assert (await d.run("hello", on_approval="allow")).status == "completed"

            asyncio.run(child())
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)

    async def parent():
        assert (await c.state()).status == "idle", "the parent's client is untouched"
        await c.close()

    asyncio.run(parent())
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
