"""Endurance of koma_sdk, the twin of scripts/soak.mjs with the same sizes
and bounds: `python3 python/dev.py soak` (the full run) or `soak.py --short`
(the slice python/tests/test_soak.py runs).

  soak:    2,000,000 events and 10,000 requests through one client; RSS must
           stay flat between 20% and 100% of the run (growth at most 16 MiB
           or 15%, whichever is more).
  strings: long strings streamed as event texts (64 KiB ones and 1.5 MiB
           ones, handed over as lifted strings) keep RSS bounded: peak growth
           at most 256 MiB while 3 GiB pass (640 MiB in the short run).
  churn:   300 clients opened and closed in a row leave no process, zombie
           or file descriptor behind; then 32 clients at once, 500 requests
           each, all answered.

The core's state-machine test is the same for both packages (`npm run soak`
runs it); this runs what is Python's. `--loop trio` runs it under trio.
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from koma_sdk import Client
from koma_sdk.sim import path as sim_path

SHORT = "--short" in sys.argv
LOOP = sys.argv[sys.argv.index("--loop") + 1] if "--loop" in sys.argv else "asyncio"
CFG: dict[str, int] = (
    {"events": 100_000, "requests": 1_000, "churn": 30, "parallel": 8, "each": 100, "string_bytes": 640 * 2**20}
    if SHORT
    else {"events": 2_000_000, "requests": 10_000, "churn": 300, "parallel": 32, "each": 500, "string_bytes": 3 * 2**30}
)
MIB = 2**20
failed: list[str] = []


def fail(message: str) -> None:
    print(f"soak: FAILED: {message}", flush=True)
    failed.append(message)


def mib(n: float) -> str:
    return f"{n / MIB:.1f}"


def status(field: str) -> int:
    """A field of /proc/self/status in bytes (VmRSS, VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def child_processes() -> list[tuple[int, str]]:
    """This process's children (zombies included), from /proc/<pid>/stat."""
    out = []
    me = os.getpid()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text(encoding="latin-1")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == me:
            out.append((int(d), fields[0]))
    return out


def env(home: str) -> dict[str, str]:
    return {"KOMA_SIM_HOME": home, "KOMA_SIM_DELAY_MS": "0", "KOMA_SIM_BENCH": "1"}


async def take_outputs(events: Any, count: int, text_bytes: int | None = None) -> None:
    got = 0
    while got < count:
        item = await anext(events)
        if item.type == "overflow":
            raise RuntimeError("overflow during the soak")
        if item.name != "output":
            continue
        if text_bytes is not None and len(item.data["text"]) != text_bytes:
            raise RuntimeError(f"a text of {len(item.data['text'])} characters, not {text_bytes}")
        got += 1


async def soak(home: str) -> None:
    async with Client(SIM, env=env(home)) as client:
        await client.create()
        per_window = 200
        windows = CFG["events"] // per_window
        requests_per_window = max(1, round(CFG["requests"] / windows))
        samples: list[tuple[float, int]] = []
        events = requests = 0
        stream = aiter(client.events())
        for w in range(windows):
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.request, "bench_events", {"count": per_window, "bytes": 200})
                await take_outputs(stream, per_window)
            events += per_window
            requests += 1
            for _ in range(1, requests_per_window):
                await client.state()
                requests += 1
            if w % (windows // 50) == windows // 50 - 1:
                gc.collect()
                samples.append(((w + 1) / windows, status("VmRSS")))
    window = [rss for at, rss in samples if at >= 0.2]
    start, top = window[0], max(window)
    growth = top - start
    print(
        f"soak: {events} events, {requests} requests; RSS at 20%: {mib(start)} MiB, max after: {mib(top)} MiB, "
        f"growth {mib(growth)} MiB",
        flush=True,
    )
    print(f"soak: RSS samples (MiB): {' '.join(mib(rss) for _, rss in samples)}", flush=True)
    if growth > max(16 * MIB, start * 0.15):
        fail(f"RSS grew by {mib(growth)} MiB after 20% of the run")


async def strings(home: str) -> None:
    async with Client(SIM, env=env(home)) as client:
        await client.create()
        stream = aiter(client.events())
        gc.collect()
        before = status("VmRSS")
        reset_peak()
        passed = count = 0
        for size, per_window in ((64 * 1024, 64), (1_500_000, 16)):
            windows = -(-CFG["string_bytes"] // 2 // (size * per_window))
            for _ in range(windows):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(client.request, "bench_events", {"count": per_window, "bytes": size})
                    await take_outputs(stream, per_window, size)
                passed += size * per_window
                count += per_window
    growth = status("VmHWM") - before
    print(f"strings: {count} texts, {mib(passed)} MiB in all; peak RSS growth {mib(growth)} MiB", flush=True)
    if growth > 256 * MIB:
        fail(f"RSS grew by {mib(growth)} MiB while long strings streamed")


async def churn(home: str) -> None:
    async with Client(SIM, env=env(home)) as warm:
        await warm.state()
    gc.collect()
    fds_before = fd_count()
    for _ in range(CFG["churn"]):
        async with Client(SIM, env=env(home)) as c:
            await c.create()
            await c.state()
    gc.collect()
    left = child_processes()
    fds_after = fd_count()
    zombies = sum(1 for _, state in left if state == "Z")
    print(
        f"churn: {CFG['churn']} clients opened and closed; processes left: {len(left)} (zombies: {zombies}); "
        f"fds before {fds_before}, after {fds_after}",
        flush=True,
    )
    if left:
        fail(f"processes left behind: {left}")
    if fds_after > fds_before:
        fail(f"file descriptors leaked: {fds_before} -> {fds_after}")

    answered = 0

    async def one() -> None:
        nonlocal answered
        async with Client(SIM, env=env(home)) as c:
            await c.create()
            for start in range(0, CFG["each"], 16):

                async def ask() -> None:
                    nonlocal answered
                    if (await c.state()).status == "idle":
                        answered += 1

                async with anyio.create_task_group() as tg:
                    for _ in range(min(16, CFG["each"] - start)):
                        tg.start_soon(ask)

    async with anyio.create_task_group() as tg:
        for _ in range(CFG["parallel"]):
            tg.start_soon(one)
    total = CFG["parallel"] * CFG["each"]
    print(
        f"churn: {CFG['parallel']} clients at once, {CFG['each']} requests each: {answered} of {total} answered",
        flush=True,
    )
    if answered != total:
        fail("not every request was answered")
    if child_processes():
        fail("processes left after the parallel clients")


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="koma-soak-") as home:
        for part in (soak, strings, churn):
            started = time.monotonic()
            await part(home)
            print(f"{part.__name__}: {time.monotonic() - started:.1f} s", flush=True)


SIM = os.environ.get("KOMA_SIM_PATH") or sim_path()

if __name__ == "__main__":
    print(f"soak ({'short' if SHORT else 'full'}, {LOOP}): koma-sim {SIM}", flush=True)
    anyio.run(main, backend=LOOP)
    if failed:
        sys.exit(1)
    print("soak: ok")
