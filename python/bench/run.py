"""The benchmark of koma_sdk against a careful pure-asyncio client of the same
protocol (pure_asyncio_client.py), both driving koma-sim in bench mode, in
one run, alternating koma_sdk, pure, koma_sdk, pure, ... for every workload:

  w1  small events (200 B text)          events/s              goal >= 3x
  w2  64 KiB events                      events/s              goal >= 3x
  w3  sequential state()                 round trips/s         goal >= 1.5x
  w4  state(), 64 in flight              round trips/s         goal >= 2x
  w5  one 40 MiB response, fresh process time; peak RSS growth goal >= 2x, RSS <= 2.2x frame
  w6  a steady 20,000 events/s           the loop thread's busy share  goal <= 0.3x

    python bench/run.py            the real run (a few minutes)
    python bench/run.py --smoke    every workload briefly; exits 0 when every
                                   run completed correctly (no speed asserted)
    options: --rounds N, --only w1,w3

Ratios are koma_sdk / pure asyncio for rates, pure / koma_sdk for the 40 MiB
response's time, koma_sdk / pure for the busy share; medians of the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from common import BLOB_OVERHEAD, FRAME_LIMIT, MIB, SIDE_NAME, SIDES, child_cpu, make_client, sim_path
from workloads import events_workload, round_trips_workload, steady_workload

HERE = Path(__file__).resolve().parent
BLOB_BYTES = FRAME_LIMIT - BLOB_OVERHEAD - 4  # room for a request id of up to four characters

FULL = {
    "w1": {"count": 200, "nbytes": 200, "total": 200_000},
    "w2": {"count": 16, "nbytes": 64 * 1024, "total": 2_000},
    "w3": {"n": 10_000, "depth": 1},
    "w4": {"n": 50_000, "depth": 64},
    "w5": {"blob_bytes": BLOB_BYTES},
    "w6": {"rate": 20_000, "seconds": 3.0, "nbytes": 200, "per_request": 64, "max_burst": 128},
}


def smaller(changes: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The full run's workloads with some counts changed."""
    return {k: {**FULL[k], **v} for k, v in changes.items()}


SMOKE = smaller(
    {
        "w1": {"total": 2_000},
        "w2": {"total": 64},
        "w3": {"n": 200},
        "w4": {"n": 2_000},
        "w5": {"blob_bytes": MIB},
        "w6": {"seconds": 0.25},
    }
)
WARM = smaller(
    {"w1": {"total": 20_000}, "w2": {"total": 256}, "w3": {"n": 1_000}, "w4": {"n": 5_000}, "w6": {"seconds": 0.3}}
)


class Workload:
    def __init__(
        self,
        key: str,
        name: str,
        kind: str,
        goal: float,
        fn: Callable[..., Awaitable[dict[str, Any]]] | None,
        size: Callable[[dict[str, Any]], str],
        rss_goal: float | None = None,
    ) -> None:
        self.key, self.name, self.kind, self.goal, self.fn, self.size, self.rss_goal = (
            key,
            name,
            kind,
            goal,
            fn,
            size,
            rss_goal,
        )


WORKLOADS = [
    Workload("w1", "small events (200 B text)", "rate", 3.0, events_workload, lambda p: f"{p['total']:,} events"),
    Workload("w2", "64 KiB events", "rate", 3.0, events_workload, lambda p: f"{p['total']:,} events"),
    Workload("w3", "sequential state()", "rate", 1.5, round_trips_workload, lambda p: f"{p['n']:,} round trips"),
    Workload("w4", "state(), 64 in flight", "rate", 2.0, round_trips_workload, lambda p: f"{p['n']:,} round trips"),
    Workload(
        "w5",
        "one 40 MiB response (fresh process each)",
        "blob",
        2.0,
        None,
        lambda p: f"frame {p['blob_bytes'] + BLOB_OVERHEAD + 1:,} B",
        rss_goal=2.2,
    ),
    Workload(
        "w6",
        "steady 20,000 events/s: loop thread busy",
        "busy",
        0.3,
        steady_workload,
        lambda p: f"{p['rate']:,}/s x {p['seconds']} s",
    ),
]


async def run_in_process(side: str, w: Workload, params: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One measured run: a fresh client, probe, a warm state(), the workload, close."""
    gc.collect()
    c = make_client(side)
    try:
        await c.probe()
        await c.state()
        pid = c.pid
        sim0 = child_cpu(pid)
        assert w.fn is not None
        r = await asyncio.wait_for(w.fn(c, **params), timeout)
        r["sim_cpu"] = child_cpu(pid) - sim0
        return r
    except Exception as e:  # noqa: BLE001 - a failed run is reported, not raised
        return {"ok": False, "detail": f"{getattr(e, 'code', type(e).__name__)}: {e}"}
    finally:
        await c.close()


def run_blob(side: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One 40 MiB response in a fresh Python process (rss_one.py)."""
    try:
        p = subprocess.run(
            [sys.executable, str(HERE / "rss_one.py"), side, str(params["blob_bytes"])],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "detail": f"rss_one.py did not end within {timeout:.0f} s"}
    try:
        r: dict[str, Any] = json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"ok": False, "detail": f"rss_one.py exited {p.returncode} without a result: {p.stderr[-500:]}"}
    r["ok"] = bool(r.get("ok")) and p.returncode == 0
    r["units"] = 1
    r["frame"] = params["blob_bytes"] + BLOB_OVERHEAD + 1
    r.setdefault("detail", r.get("error", ""))
    return r


def median(xs: list[float]) -> float:
    xs = [x for x in xs if math.isfinite(x)]
    return statistics.median(xs) if xs else float("nan")


def fmt_rate(r: float) -> str:
    if not math.isfinite(r):
        return "n/a"
    if r >= 1e6:
        return f"{r / 1e6:.2f} M/s"
    if r >= 1e3:
        return f"{r / 1e3:.1f} k/s"
    return f"{r:.1f} /s"


def fmt_x(x: float) -> str:
    return f"{x:.2f}x" if math.isfinite(x) else "n/a"


def fmt_us(s: float) -> str:
    return f"{s * 1e6:.1f}" if math.isfinite(s) else "n/a"


def shown(w: Workload, r: dict[str, Any]) -> str:
    if not r["ok"]:
        return f"FAILED ({r.get('detail', '')})"
    if w.kind == "blob":
        return f"{r['seconds']:.3f} s, RSS +{r['growth'] / MIB:.1f} MiB, cpu {r['cpu']:.2f} s"
    text = f"{fmt_rate(r['rate'])} in {r['seconds']:.3f} s, cpu {fmt_us(r['cpu'] / r['units'])} us/unit (loop {fmt_us(r['loop_cpu'] / r['units'])}, sim {fmt_us(r['sim_cpu'] / r['units'])})"
    if w.kind == "busy":
        text = f"busy {r['busy'] * 100:.1f}% at {fmt_rate(r['rate'])}, {r['overflows']} overflow(s); " + text
    return text


def summarize(w: Workload, params: dict[str, Any], runs: dict[str, list[dict[str, Any]]]) -> list[str]:
    a, p = runs["koma_sdk"], runs["pure"]

    def med(xs: list[dict[str, Any]], key: str) -> float:
        return median([float(r[key]) for r in xs])

    met: list[bool] = []
    if w.kind == "rate":
        ra, rp = med(a, "rate"), med(p, "rate")
        ratio = ra / rp
        cells = [fmt_rate(ra), fmt_rate(rp)]
        goal = f">= {w.goal}x"
        met.append(ratio >= w.goal)
    elif w.kind == "blob":
        ta, tp = med(a, "seconds"), med(p, "seconds")
        ga, gp = med(a, "growth"), med(p, "growth")
        frame = params["blob_bytes"] + BLOB_OVERHEAD + 1
        ratio = tp / ta
        cells = [
            f"{ta:.3f} s, RSS +{ga / MIB:.1f} MiB ({ga / frame:.2f}x frame)",
            f"{tp:.3f} s, RSS +{gp / MIB:.1f} MiB ({gp / frame:.2f}x frame)",
        ]
        goal = f">= {w.goal}x, RSS <= {w.rss_goal}x frame"
        assert w.rss_goal is not None
        met += [ratio >= w.goal, ga / frame <= w.rss_goal]
    else:
        ba, bp = med(a, "busy"), med(p, "busy")
        ratio = ba / bp
        over = sum(r["overflows"] for r in a)
        cells = [
            f"busy {ba * 100:.1f}%, {over} overflow(s)",
            f"busy {bp * 100:.1f}%, {sum(r['overflows'] for r in p)} overflow(s)",
        ]
        goal = f"<= {w.goal}x, no overflow"
        met.append(ratio <= w.goal and over == 0)
    cpu = [fmt_us(med(xs, "cpu") / med(xs, "units")) for xs in (a, p)]
    return [
        w.name,
        w.size(params),
        *cells,
        fmt_x(ratio),
        goal,
        "met" if all(met) else "NOT met",
        f"{cpu[0]} / {cpu[1]}",
    ]


def print_table(rows: list[list[str]]) -> None:
    head = [
        "workload",
        "size",
        "koma_sdk (median)",
        "pure asyncio (median)",
        "ratio",
        "goal",
        "",
        "CPU us/unit, all threads: koma_sdk / pure",
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print()
    print("  ".join(h.ljust(widths[i]) for i, h in enumerate(head)))
    print("  ".join("-" * x for x in widths))
    for r in rows:
        print("  ".join(c.ljust(widths[i]) for i, c in enumerate(r)))
    print("\n### Markdown\n")
    print("| " + " | ".join(h or "met" for h in head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for r in rows:
        print("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    print(
        "\nRatios: koma_sdk over pure asyncio for rates (above 1: koma_sdk is faster); pure over koma_sdk for the 40 MiB response's time;"
        "\nkoma_sdk over pure for the busy share (the loop thread's CPU time over wall time; below 1: koma_sdk leaves the loop freer)."
        "\nCPU us/unit: this process's user+system time, every thread, per event or round trip (koma-sim's apart, in the run lines)."
    )


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    keys = [w.key for w in WORKLOADS]
    only = args.only.split(",") if args.only else keys
    if any(k not in keys for k in only) or (args.rounds is not None and args.rounds < 1):
        print(f"bad --only or --rounds (workloads: {', '.join(keys)}; rounds at least 1)", file=sys.stderr)
        return 2
    sizes = SMOKE if args.smoke else FULL
    rounds = args.rounds or (1 if args.smoke else 5)
    timeout = 60.0 if args.smoke else 300.0
    import koma_sdk

    load = Path("/proc/loadavg").read_text().split()[:3]
    print(
        f"koma_sdk benchmark{' (smoke: tiny counts, no speed asserted)' if args.smoke else ''}: Python {sys.version.split()[0]}, "
        f"koma_sdk from {Path(koma_sdk.__file__).parent}, koma-sim {sim_path()}, {os.cpu_count()} CPU(s), load average {' '.join(load)}, {rounds} round(s)"
    )
    failures: list[str] = []
    rows: list[list[str]] = []
    t0 = time.perf_counter()
    for w in WORKLOADS:
        if w.key not in only:
            continue
        params = sizes[w.key]
        print(f"\n{w.key} {w.name}: {w.size(params)}, {rounds} round(s)")
        if not args.smoke and w.key in WARM:
            for side in SIDES:
                r = await run_in_process(side, w, WARM[w.key], timeout)
                if not r["ok"]:
                    failures.append(f"{w.key} warm-up {side}: {r['detail']}")
        runs: dict[str, list[dict[str, Any]]] = {s: [] for s in SIDES}
        for i in range(rounds):
            for side in SIDES:
                r = (
                    run_blob(side, params, timeout)
                    if w.kind == "blob"
                    else await run_in_process(side, w, params, timeout)
                )
                print(f"  {SIDE_NAME[side]:<13} #{i + 1}: {shown(w, r)}")
                if r["ok"]:
                    runs[side].append(r)
                else:
                    failures.append(f"{w.key} {side} #{i + 1}: {r.get('detail')}")
        if all(runs[s] for s in SIDES):
            rows.append(summarize(w, params, runs))
    if rows:
        print_table(rows)
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")
    if failures:
        print(f"\n{len(failures)} failure(s):\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    print("smoke run: every workload completed correctly" if args.smoke else "all runs completed correctly")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
