"""Many agents in one Python process: the package's threads do not grow with
the clients, and the guarantees hold at scale and on every spawn path
(KOMA_SDK_SPAWN: the default, `no-pidfd`, `portable`). The twin of
scale.test.mjs, each case in an interpreter of its own so that its counts
start from a clean process."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import (
    FOREVER,
    LOOPS,
    RUN_MAIN,
    exit_watched_by_thread,
    killed_with_sigkill,
    lacks_parent_death,
    last_json,
    linux_proc,
    run_python,
    running,
    script,
    sim_env,
)

SPAWNS = ["default", "no-pidfd", "portable"]

# Up to 200 clients hold three pipes (and a pidfd) each (Windows has no descriptor limit to raise).
RAISE_NOFILE = """
if sys.platform != "win32":
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
"""


def spawn_env(spawn: str) -> dict[str, str]:
    return {} if spawn == "default" else {"KOMA_SDK_SPAWN": spawn}


@pytest.mark.parametrize("spawn", SPAWNS)
def test_the_threads_stay_few_and_constant_from_1_to_200_clients(home: Path, spawn: str) -> None:
    linux_proc("this process's threads")
    r = run_python(
        RAISE_NOFILE
        + f"""
import asyncio
def threads():
    return len(os.listdir("/proc/self/task"))
async def main():
    base = threads()
    async def start(n):
        clients = [Client(SIM, env={sim_env(home)!r}) for _ in range(n)]
        await asyncio.gather(*(c.probe() for c in clients))
        return clients
    one = await start(1)
    with_one = threads() - base
    many = await start(200)
    with_many = threads() - base
    await asyncio.gather(*(c.state() for c in one + many))
    await asyncio.gather(*(c.close() for c in one + many))
    print(json.dumps({{"with_one": with_one, "with_many": with_many, "after": threads() - base}}))
asyncio.run(main())
""",
        env=spawn_env(spawn),
    )
    assert r.returncode == 0, r.stderr
    out = last_json(r.stdout)
    assert out["with_one"] <= 8, f"threads added with 1 client: {out}"
    if not exit_watched_by_thread(spawn):
        # Every exit is watched by the reactor (a pidfd, or a kqueue on macOS).
        assert out["with_many"] == out["with_one"], f"threads added with 201 clients: {out}"
    else:
        # Without pidfds each child's exit is watched by a thread of its own.
        assert out["with_many"] >= 200, f"a watcher thread per child: {out}"
    assert out["after"] <= out["with_one"], f"after close, no thread of a client is left: {out}"


@pytest.mark.skipif(lacks_parent_death() is not None, reason=str(lacks_parent_death()))
@pytest.mark.parametrize("spawn", ["default", "portable"])
@pytest.mark.parametrize("loop", LOOPS)
def test_200_clients_open_and_python_killed_with_sigkill_leaves_no_koma_nor_tool(
    home: Path, loop: str, spawn: str
) -> None:
    gather = {
        "asyncio": "await asyncio.gather(*(c.probe() for c in clients))",
        "trio": "async with trio.open_nursery() as n:\n        for c in clients:\n            n.start_soon(c.probe)",
    }[loop]
    # Each koma-sim ignores the end of its stdin, and has a tool in its group.
    src = script(
        RAISE_NOFILE
        + f"""
async def main():
    clients = [Client(SIM, env={sim_env(home, faults="ignore_eof,spawn_tool")!r}) for _ in range(200)]
    {gather}
    print(json.dumps([c.pid for c in clients]), flush=True)
    {FOREVER[loop]}
{RUN_MAIN[loop]}
"""
    )
    ran = killed_with_sigkill(src, spawn=spawn, bound=120)
    assert len(ran) == 400, f"200 komas and their tools ran: {len(ran)}"


@pytest.mark.parametrize("spawn", SPAWNS)
def test_a_child_whose_tool_holds_its_pipes_still_has_its_exit_seen(home: Path, spawn: str) -> None:
    r = run_python(
        f"""
import asyncio, re
async def main():
    c = Client(SIM, env={sim_env(home, faults="orphan_tool")!r})
    await c.probe()
    try:
        await c.state()
        first = ["answered", ""]
    except KomaError as e:
        first = [e.code, str(e)]
    try:
        await c.state()
        later = "answered"
    except KomaError as e:
        later = e.code
    await c.close()
    tool = int(re.search(r"tool pid (\\d+)", c.stderr).group(1))
    try:
        stat = open(f"/proc/{{tool}}/stat").read()
        tool_gone = stat[stat.rindex(")") + 2] in "ZX"
    except OSError:
        tool_gone = True
    print(json.dumps({{"first": first, "later": later, "tool_gone": tool_gone}}))
asyncio.run(main())
""",
        env=spawn_env(spawn),
    )
    assert r.returncode == 0, r.stderr
    out = last_json(r.stdout)
    assert out["first"][0] == "delivery_unknown"
    assert "exited with code 1" in out["first"][1], out["first"][1]
    assert out["later"] == "transport_failure"
    assert out["tool_gone"] is True, "the tool is gone when close() returns"


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("spawn", SPAWNS)
def test_every_spawn_path_runs_a_whole_session(home: Path, spawn: str, loop: str) -> None:
    r = run_python(
        f"""
async def main():
    c = Client(SIM, env={sim_env(home, faults="spawn_tool")!r})
    hello = await c.probe()
    tool = [d["tool_pid"] for d in hello.diagnostics if "tool_pid" in d][0]
    await c.create()
    turn = (await c.submit("hello")).turn
    async for e in c.events():
        if e.type == "event" and e.name == "turn_finished" and e.data["turn"] == turn:
            break
    pid = c.pid
    await c.detach()
    from helpers import alive
    gone = not alive(pid)
    await c.close()
    d = Client(SIM, env={sim_env(home, faults="spawn_tool,ignore_detach,ignore_eof,ignore_sigterm")!r})
    hello = await d.probe()
    tool2 = [x["tool_pid"] for x in hello.diagnostics if "tool_pid" in x][0]
    pid2 = d.pid
    await d.close()
    print(json.dumps({{"gone": gone, "pid2": pid2, "tools": [tool, tool2]}}))
{RUN_MAIN[loop]}
""",
        env=spawn_env(spawn),
    )
    assert r.returncode == 0, r.stderr
    out = last_json(r.stdout)
    assert out["gone"] is True, "detach returns once koma has exited and been reaped"
    assert not running(out["pid2"]), "a koma that ignores everything is killed by close()"
    assert not any(running(t) for t in out["tools"]), "the process groups were killed"
