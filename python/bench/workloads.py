"""The benchmark's workloads, one client at a time, against koma-sim's bench
methods; each checks what it got (counts, sequence, sizes), so that a fast
wrong run never counts."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from common import EVENT_BOUND, Clock


async def events_workload(c: Any, count: int, nbytes: int, total: int) -> dict[str, Any]:
    """Events through `async for`: bench_events windows of `count`, pipelined
    so that events requested and not yet taken never pass the 256-frame
    bound (no overflow by construction, and the sim never idles)."""
    windows = -(-total // count)
    state = {"requested": 0, "reqs": 0, "answered": 0}
    taken = text_bytes = seq_errors = overflows = 0
    last_seq = -1
    answers: list[asyncio.Task[None]] = []

    async def ask() -> None:
        r = await c.request("bench_events", {"count": count, "bytes": nbytes})
        if r != {"count": count}:
            raise AssertionError(f"bench_events answered {r!r}")
        state["answered"] += 1

    def issue() -> None:
        while state["reqs"] < windows and state["requested"] - taken + count <= EVENT_BOUND:
            answers.append(asyncio.ensure_future(ask()))
            state["reqs"] += 1
            state["requested"] += count

    issue()
    clock = Clock()
    async for e in c.events():
        if e.type == "event":
            text_bytes += len(e.data["text"])
            if last_seq != -1 and e.seq != last_seq + 1:
                seq_errors += 1
            last_seq = e.seq
            taken += 1
        else:
            overflows += 1
            taken += e.dropped
        if taken >= state["requested"] and state["reqs"] == windows:
            break
        issue()
    await asyncio.gather(*answers)
    seconds, cpu, loop_cpu = clock.since()
    n = windows * count
    ok = overflows == 0 and seq_errors == 0 and state["answered"] == windows and text_bytes == n * nbytes
    detail = (
        ""
        if ok
        else f"overflows {overflows}, seq errors {seq_errors}, answered {state['answered']}/{windows}, text {text_bytes}/{n * nbytes}"
    )
    return {
        "ok": ok,
        "seconds": seconds,
        "units": n,
        "rate": n / seconds,
        "cpu": cpu,
        "loop_cpu": loop_cpu,
        "detail": detail,
    }


async def round_trips_workload(c: Any, n: int, depth: int) -> dict[str, Any]:
    """`n` state() round trips, `depth` of them in flight (1: one after the other)."""
    counts = {"started": 0, "idle": 0}

    async def worker() -> None:
        while counts["started"] < n:
            counts["started"] += 1
            if (await c.state()).status == "idle":
                counts["idle"] += 1

    clock = Clock()
    await asyncio.gather(*(worker() for _ in range(depth)))
    seconds, cpu, loop_cpu = clock.since()
    idle = counts["idle"]
    return {
        "ok": idle == n,
        "seconds": seconds,
        "units": n,
        "rate": n / seconds,
        "cpu": cpu,
        "loop_cpu": loop_cpu,
        "detail": "" if idle == n else f"{idle}/{n} idle",
    }


async def steady_workload(
    c: Any, rate: int, seconds: float, nbytes: int, per_request: int, max_burst: int
) -> dict[str, Any]:
    """A steady stream: every ~1 ms the events due by now at `rate` are
    requested (at most `max_burst` a tick, `per_request` a request), and
    consumed as they come. Busy share: the loop thread's CPU time over the
    stream's wall time (the client's own threads are not the loop's)."""
    total = round(rate * seconds)
    s = {"requested": 0, "answered": 0, "outstanding": 0}
    received = dropped = overflows = text_bytes = 0
    answers: list[asyncio.Task[None]] = []

    async def ask(n: int) -> None:
        r = await c.request("bench_events", {"count": n, "bytes": nbytes})
        s["outstanding"] -= 1
        s["answered"] += r["count"]

    async def ticker(t0: float) -> None:
        while s["requested"] < total:
            due = min(total, int(rate * (time.perf_counter() - t0)))
            burst = min(due - s["requested"], max_burst)
            # Never more than the protocol's 64 in flight (docs/protocol.md, Bounds).
            while burst > 0 and s["outstanding"] < 60:
                n = min(burst, per_request)
                s["outstanding"] += 1
                answers.append(asyncio.ensure_future(ask(n)))
                s["requested"] += n
                burst -= n
            await asyncio.sleep(0.001)

    clock = Clock()
    tick = asyncio.ensure_future(ticker(clock.wall))
    try:
        async for e in c.events():
            if e.type == "event":
                text_bytes += len(e.data["text"])
                received += 1
            else:
                overflows += 1
                dropped += e.dropped
            if received + dropped >= total:
                break
    finally:
        tick.cancel()
    await asyncio.gather(*answers)
    wall, cpu, loop_cpu = clock.since()
    accounted = received + dropped == total and s["answered"] == total and text_bytes == received * nbytes
    return {
        # An overflow is a result (the goal says none), not a broken run.
        "ok": accounted,
        "seconds": wall,
        "units": received,
        "rate": received / wall,
        "cpu": cpu,
        "loop_cpu": loop_cpu,
        "busy": loop_cpu / wall,
        "overflows": overflows,
        "detail": f"{overflows} overflow(s), {dropped} dropped"
        + ("" if accounted else f"; accounting off: {received} + {dropped} of {total}"),
    }
