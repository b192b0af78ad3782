"""Shared by the benchmark's scripts: koma-sim and its environment, the two
clients, and CPU accounting from /proc."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from pure_asyncio_client import PureAsyncioClient

ROOT = Path(__file__).resolve().parents[2]
SIDES = ["koma_sdk", "pure"]
SIDE_NAME = {"koma_sdk": "koma_sdk", "pure": "pure asyncio"}
MIB = 1 << 20
FRAME_LIMIT = 41_943_040
# The frame of a blob is {"id":"N","result":{"blob":"…"}}: 30 bytes and the id.
BLOB_OVERHEAD = 30
EVENT_BOUND = 256  # the event buffer's bound (docs/protocol.md, Bounds)
CLK_TCK = os.sysconf("SC_CLK_TCK")


def sim_path() -> str:
    """This checkout's koma-sim, else the one koma_sdk ships."""
    local = ROOT / "bin" / "koma-sim"
    if local.exists():
        return str(local)
    import koma_sdk.sim

    return koma_sdk.sim.path()


_home: str | None = None


def sim_env() -> dict[str, str]:
    """One KOMA_SIM_HOME for the whole run: bench methods need no session."""
    global _home
    if _home is None:
        _home = tempfile.mkdtemp(prefix="koma-bench-home-")
        atexit.register(shutil.rmtree, _home, True)
    return {"KOMA_SIM_BENCH": "1", "KOMA_SIM_DELAY_MS": "0", "KOMA_SIM_HOME": _home}


def make_client(side: str) -> Any:
    if side == "koma_sdk":
        from koma_sdk import Client

        return Client(sim_path(), env=sim_env())
    if side == "pure":
        return PureAsyncioClient(sim_path(), env=sim_env())
    raise ValueError(f"unknown side {side}")


def child_cpu(pid: int | None) -> float:
    """A child's user+system CPU seconds so far (NaN once it is gone)."""
    if pid is None:
        return float("nan")
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return float("nan")
    fields = stat[stat.rindex(")") + 2 :].split(" ")
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class Clock:
    """Wall time, this process's CPU (every thread), this thread's CPU."""

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = time.process_time()
        self.thread = time.thread_time()

    def since(self) -> tuple[float, float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu, time.thread_time() - self.thread


def thread_cpu() -> dict[int, tuple[float, str]]:
    """CPU seconds of each thread of this process so far, with its name, from
    schedstat (nanoseconds: a turn of 10,000 events is a few clock ticks)."""
    out: dict[int, tuple[float, str]] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            ns = int(Path(f"/proc/self/task/{tid}/schedstat").read_text().split()[0])
            comm = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
        except OSError:
            continue  # gone meanwhile
        out[int(tid)] = (ns / 1e9, comm)
    return out


def thread_delta(a: dict[int, tuple[float, str]], b: dict[int, tuple[float, str]]) -> dict[str, float]:
    """`b - a` of two thread_cpu() samples, grouped: the main thread (the
    event loop's), the core's koma-io threads, the rest."""
    d = {"main": 0.0, "io": 0.0, "other": 0.0}
    for tid, (t, comm) in b.items():
        dt = t - a.get(tid, (0.0, ""))[0]
        key = "main" if tid == os.getpid() else "io" if comm.startswith("koma-io") else "other"
        d[key] += dt
    return d


def process_cpu_fine(pid: int | None) -> float:
    """A live child's CPU seconds so far, every thread, from schedstat (NaN once it is gone)."""
    if pid is None:
        return float("nan")
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return float("nan")
    ns = 0
    for tid in tasks:
        try:
            ns += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
        except OSError:
            pass
    return ns / 1e9
