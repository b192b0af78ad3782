"""The turn workloads, base against new: one turn of N `output` events of B
bytes (koma-sim's `bench_turn N B`, sent as fast as koma-sim can), taken
three ways by koma_sdk as built from a base commit (imported as
`koma_sdk_base`) and by this checkout's koma_sdk, both in this one process,
and this checkout's traced with OpenTelemetry (`traced`: a tracer provider
whose span processor exports to a no-op exporter, and a meter provider:
every span and metric point is made), the three alternated (base, new,
traced, then new, traced, base, ...), against the same koma-sim (this
checkout's bin/koma-sim, else the one koma_sdk ships):

  run     `await client.run(...)`: host CPU per event
  turn    `async for item in client.turn(...)`, then `turn.result()`:
          events/s and CPU per event
  events  `client.submit(...)`, then `async for item in client.events()`
          up to its turn_finished: events/s and CPU per event

CPU is read per thread from /proc/self/task/*/schedstat (nanoseconds): the
main thread (the event loop's), the core's koma-io threads, and the rest;
koma-sim's apart. Events/s is N over the wall time of the turn, from the
call to its result.

    python bench/turns.py                  base = the merge-base of HEAD with main
    python bench/turns.py --base COMMIT    base = that commit (exported and built
                                           once into target/bench-base/: base_build.py)
    python bench/turns.py --smoke          every workload tiny, base = new (nothing
                                           is built); exits 0 when every turn came
                                           out whole (no timing asserted)
    options: --rounds N (5), --turns K (measured turns per side and round, 5;
             each client also runs one turn first that is not measured),
             --n N (outputs per turn, 10000), --bytes B (200)

Run it with the venv's Python (python/.venv/bin/python, made by `python3
python/dev.py test`): it imports the installed koma_sdk, and building a
base wheel needs its maturin.

The goals (the core turn layer's): run()'s main-thread CPU per event
new/base <= 0.2; turn()'s and events()'s events/s new/base >= 1.0.
Telemetry's: off (new) as fast as the base within the rounds' spread; on
(traced) costs per turn, not per event (the row "CPU per turn, over new's"
says how much).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import math
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

from base_build import PACKAGE, build_base_package, describe_new, resolve_base

from common import process_cpu_fine, sim_env, sim_path, thread_cpu, thread_delta

TURN_SECONDS = 60.0


class Sizes(NamedTuple):
    rounds: int
    turns: int
    warm: int
    n: int
    nbytes: int


Check = Callable[[], str]
#: What a workload's turn gave: its check ("" when whole, else what was wrong), and whether it overflowed.
Outcome = tuple[Check, bool]


def text(p: Sizes) -> str:
    return f"bench_turn {p.n} {p.nbytes}"


async def run_workload(c: Any, p: Sizes) -> Outcome:
    """`run()`: the result, checked whole."""
    r = await c.run(text(p), on_approval="deny")

    def check() -> str:
        want = p.n * p.nbytes
        whole = len(r.output) == want and r.output == "x" * want
        if r.status == "completed" and whole and not r.overflowed and r.events >= p.n + 2:
            return ""
        return f"status {r.status}, output {len(r.output)}/{want} ({'' if whole else 'not '}all x), events {r.events}, overflowed {r.overflowed}"

    return check, bool(r.overflowed)


async def turn_workload(c: Any, p: Sizes) -> Outcome:
    """`async for` over a Turn, then its result."""
    t = c.turn(text(p), on_approval="deny")
    outputs = text_bytes = overflows = 0
    turns: set[str] = set()
    async for item in t:
        if item.type != "event":
            overflows += 1
        elif item.name == "output":
            outputs += 1
            text_bytes += len(item.data["text"])
            turns.add(item.data["turn"])
    r = await t.result()
    tid = await t.id()

    def check() -> str:
        if (
            r.status == "completed"
            and outputs == p.n
            and text_bytes == p.n * p.nbytes
            and overflows == 0
            and turns == {tid}
        ):
            return ""
        return f"status {r.status}, outputs {outputs}/{p.n}, text {text_bytes}, overflows {overflows}, turn ids {sorted(turns)} (turn {tid})"

    return check, overflows > 0


async def events_workload(c: Any, p: Sizes) -> Outcome:
    """`submit()`, then `events()` up to the turn's turn_finished."""
    turn = (await c.submit(text(p))).turn
    outputs = text_bytes = overflows = 0
    status = None
    async for item in c.events():
        if item.type != "event":
            # Its turn_finished may be among the dropped: the turn has failed.
            overflows += 1
            break
        d = item.data
        if item.name == "output" and d["turn"] == turn:
            outputs += 1
            text_bytes += len(d["text"])
        elif item.name == "turn_finished" and d["turn"] == turn:
            status = d["status"]
            break

    def check() -> str:
        if status == "completed" and outputs == p.n and text_bytes == p.n * p.nbytes and overflows == 0:
            return ""
        return f"status {status}, outputs {outputs}/{p.n}, text {text_bytes}, overflows {overflows}"

    return check, overflows > 0


class Workload(NamedTuple):
    key: str
    name: str
    fn: Callable[[Any, Sizes], Awaitable[Outcome]]


WORKLOADS = [
    Workload("run", "run()", run_workload),
    Workload("turn", "turn(), async for", turn_workload),
    Workload("events", "events() after submit()", events_workload),
]


async def drain_to(c: Any, name: str, status: str | None = None) -> None:
    """Take events() up to the next `name` event (with that status), so that
    no event waits in the buffer when the next turn starts."""
    async for item in c.events():
        if item.type == "event" and item.name == name and (status is None or item.data["status"] == status):
            return


async def one_turn(c: Any, w: Workload, p: Sizes) -> dict[str, Any]:
    """One turn of `w`, timed (wall time, CPU per thread group, koma-sim's CPU), then checked."""
    gc.collect()
    pid = c.pid
    sim0 = process_cpu_fine(pid)
    all0 = time.process_time()
    th0 = thread_cpu()
    t0 = time.perf_counter()
    check, overflowed = await asyncio.wait_for(w.fn(c, p), TURN_SECONDS)
    seconds = time.perf_counter() - t0
    th = thread_delta(th0, thread_cpu())
    cpu_all = time.process_time() - all0
    sim = process_cpu_fine(pid) - sim0
    detail = check()
    if not detail:
        # The idle state that follows every turn (after a failed one it may be lost).
        await asyncio.wait_for(drain_to(c, "state", "idle"), TURN_SECONDS)
    return {
        "ok": detail == "",
        "overflowed": overflowed,
        "detail": detail,
        "seconds": seconds,
        "all": cpu_all,
        "sim": sim,
        **th,
    }


def traced_options() -> dict[str, Any]:
    """The traced side's options: spans made and exported to nothing, metrics recorded."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class Nothing(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(Nothing()))
    return {
        "tracer_provider": tracer_provider,
        "meter_provider": MeterProvider(metric_readers=[InMemoryMetricReader()]),
    }


Side = tuple[ModuleType, dict[str, Any]]
ORDER = ("base", "new", "traced")


async def side_round(side: Side, w: Workload, p: Sizes) -> list[dict[str, Any]]:
    """One side's part of a round: a fresh client, `warm` turns not measured, then `turns` measured ones."""
    mod, options = side
    c = mod.Client(sim_path(), env=sim_env(), **options)
    runs: list[dict[str, Any]] = []
    try:
        await c.probe()
        await c.create()
        await asyncio.wait_for(drain_to(c, "diagnostic"), TURN_SECONDS)
        for i in range(p.warm + p.turns):
            r = await one_turn(c, w, p)
            if i >= p.warm or not r["ok"]:
                runs.append(r)
            if not r["ok"]:
                break  # a failed turn (an overflow, as a rule) may leave its events behind: a fresh client next round
    except Exception as e:  # noqa: BLE001 - a failed run is reported, not raised
        runs.append({"ok": False, "detail": f"{getattr(e, 'code', type(e).__name__)}: {e}"})
    finally:
        await c.close()
    return runs


def median(xs: list[float]) -> float:
    xs = [x for x in xs if math.isfinite(x)]
    return statistics.median(xs) if xs else float("nan")


def figures(runs: list[dict[str, Any]], n: int) -> dict[str, float]:
    per = {k: median([r[k] / n for r in runs]) for k in ("main", "io", "other", "all", "sim")}
    per["rate"] = median([n / r["seconds"] for r in runs])
    return per


def fmt_rate(r: float) -> str:
    if not math.isfinite(r):
        return "n/a"
    return f"{r / 1e6:.2f} M/s" if r >= 1e6 else f"{r / 1e3:.1f} k/s" if r >= 1e3 else f"{r:.1f} /s"


def fmt_us(s: float) -> str:
    return f"{s * 1e6:.2f} µs" if math.isfinite(s) else "n/a"


def figures_text(f: dict[str, float]) -> str:
    u = {k: f"{f[k] * 1e6:.2f}" for k in ("main", "io", "other", "all", "sim")}
    return f"{fmt_rate(f['rate'])}, CPU µs/event: main {u['main']}, koma-io {u['io']}, other {u['other']}, all {u['all']}; sim {u['sim']}"


Figures = dict[str, float]


def rows_of(
    w: Workload, fb: Figures, fn: Figures, ft: Figures, pairs: list[tuple[Figures, Figures, Figures]], n: int
) -> list[list[str]]:
    """[workload, measure, base, new, new/base, the rounds' new/base, traced,
    traced/new, the rounds' traced/new, goal, met] rows, from the medians of
    each side (`fb`, `fn`, `ft`) and of each round (`pairs`: base, new and
    traced of the rounds where all had whole turns)."""

    def ratio_of(n: float, b: float) -> float:
        return n / b if b else float("nan")

    def spread(rs: list[float]) -> str:
        # The spread of the rounds' own ratios: how far apart two runs of one build land here.
        rs = [r for r in rs if math.isfinite(r)]
        return f"{min(rs):.2f}-{max(rs):.2f}x" if len(rs) > 1 else "-"

    def x(r: float) -> str:
        return f"{r:.2f}x" if math.isfinite(r) else "n/a"

    def row(
        measure: str, key: str, fmt: Callable[[float], str], goal: tuple[str, Callable[[float], bool]] | None = None
    ) -> list[str]:
        ratio = ratio_of(fn[key], fb[key])
        met = ("met" if goal[1](ratio) else "NOT met") if goal else ""
        rs = spread([ratio_of(nw[key], b[key]) for b, nw, _ in pairs])
        ts = spread([ratio_of(t[key], nw[key]) for _, nw, t in pairs])
        traced = [fmt(ft[key]), x(ratio_of(ft[key], fn[key])), ts]
        return [w.name, measure, fmt(fb[key]), fmt(fn[key]), x(ratio), rs, *traced, goal[0] if goal else "-", met]

    if w.key == "run":
        rows = [
            row("main-thread CPU per event", "main", fmt_us, ("<= 0.20x", lambda r: r <= 0.2)),
            row("events/s", "rate", fmt_rate),
        ]
    else:
        rows = [
            row("events/s", "rate", fmt_rate, (">= 1.00x", lambda r: r >= 1.0)),
            row("main-thread CPU per event", "main", fmt_us),
        ]
    rows.append(row("koma-io threads' CPU per event", "io", fmt_us))
    rows.append(row("all threads' CPU per event", "all", fmt_us))
    # What tracing costs a turn: the traced side's CPU per turn over new's.
    extra = [(t["all"] - nw["all"]) * n for _, nw, t in pairs]
    lo = f"{extra_us(min(extra))} to {extra_us(max(extra))}" if len(extra) > 1 else "-"
    dash = ["-"] * 4
    rows.append(
        [
            w.name,
            "all threads' CPU per turn, over new's",
            *dash,
            extra_us((ft["all"] - fn["all"]) * n),
            "-",
            lo,
            "-",
            "",
        ]
    )
    return rows


def extra_us(s: float) -> str:
    return f"{s * 1e6:.0f} µs" if math.isfinite(s) else "n/a"


def print_table(rows: list[list[str]]) -> None:
    head = [
        "workload",
        "measure",
        "base (median)",
        "new (median)",
        "new/base",
        "rounds' new/base",
        "traced (median)",
        "traced/new",
        "rounds' traced/new",
        "goal",
        "",
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print()
    print("  ".join(h.ljust(widths[i]) for i, h in enumerate(head)))
    print("  ".join("-" * x for x in widths))
    for r in rows:
        print("  ".join(c.ljust(widths[i]) for i, c in enumerate(r)))
    print("\n### Markdown\n")
    md = [
        "Workload",
        "Measure",
        "Base (median)",
        "New (median)",
        "New / base",
        "Rounds' new / base",
        "Traced (median)",
        "Traced / new",
        "Rounds' traced / new",
        "Goal",
        "Met",
    ]
    print("| " + " | ".join(md) + " |")
    print("|" + "|".join("---:" if 2 <= i <= 8 else "---" for i in range(len(md))) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(
        "\nMedians over every measured turn of every round. CPU per event: the thread group's CPU time over the turn (schedstat), over N;"
        "\nmain = the event loop's thread, koma-io = the core's I/O threads, all = time.process_time() (every thread of this process)."
        "\nEvents/s: N over the turn's wall time, from the call to its result. Rounds' new/base: the lowest and highest"
        "\nof the rounds' own ratios (each round's medians), the spread to read a ratio against. Traced: new, with a"
        "\ntracer provider exporting to a no-op exporter and a meter provider; its CPU per turn over new's is what tracing"
        "\ncosts a turn (the lowest and highest of the rounds')."
    )


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--base", default=None)
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--turns", type=int, default=None)
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--bytes", type=int, default=200)
    args = ap.parse_args()
    p = Sizes(
        rounds=args.rounds or (1 if args.smoke else 5),
        turns=args.turns or (2 if args.smoke else 5),
        warm=0 if args.smoke else 1,
        # The smoke's turn (200 outputs and its 4 other events) fits the
        # 256-event buffer whole, so no stall of a busy machine can overflow it.
        n=args.n or (200 if args.smoke else 10_000),
        nbytes=args.bytes,
    )
    if min(p.rounds, p.turns, p.n) < 1 or p.nbytes < 0 or (args.smoke and args.base):
        print(
            "bad arguments: --rounds, --turns and --n are at least 1, --bytes at least 0; --smoke takes no --base",
            file=sys.stderr,
        )
        return 2

    import koma_sdk

    base: ModuleType = koma_sdk
    base_text = "this checkout's koma_sdk (smoke: base = new)"
    if not args.smoke:
        sha = resolve_base(args.base)
        sys.path.insert(0, str(build_base_package(sha)))
        import importlib

        base = importlib.import_module(PACKAGE)
        if base.Client is koma_sdk.Client:
            raise RuntimeError("the base and the new koma_sdk are one module")
        how = "--base" if args.base else "the merge-base with main"
        base_text = f"{sha[:7]} ({how}), {PACKAGE} from {Path(base.__file__ or '').parent}"
    sides: dict[str, Side] = {"base": (base, {}), "new": (koma_sdk, {}), "traced": (koma_sdk, traced_options())}

    load = Path("/proc/loadavg").read_text().split()[:3]
    print(
        f"koma_sdk turn workloads{' (smoke: tiny counts, base = new, no timing asserted)' if args.smoke else ''}: "
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPU(s), load average {' '.join(load)}"
    )
    print(f"base: {base_text}")
    print(f"new:  koma_sdk from {Path(koma_sdk.__file__ or '').parent}, this checkout {describe_new()}")
    warm = f", after {p.warm} not measured" if p.warm else ""
    print(
        f"koma-sim: {sim_path()}; a turn: `{text(p)}` ({p.n:,} outputs of {p.nbytes} B); {p.rounds} round(s) of {p.turns} measured turn(s) per side{warm}"
    )

    failures: list[str] = []
    rows: list[list[str]] = []
    t0 = time.perf_counter()
    for w in WORKLOADS:
        print(f"\n{w.name}")
        runs: dict[str, list[dict[str, Any]]] = {side: [] for side in ORDER}
        tally = {side: {"turns": 0, "overflowed": 0} for side in sides}
        by_round: list[dict[str, list[dict[str, Any]]]] = []
        for i in range(p.rounds):
            by_round.append({side: [] for side in ORDER})
            # Each round starts with another side: a drift of the machine weighs on all.
            for side in (*ORDER[i % 3 :], *ORDER[: i % 3]):
                rs = await side_round(sides[side], w, p)
                good = [r for r in rs if r["ok"]]
                # A turn that overflowed is a result of the real run (counted, and
                # left out of the medians); any other failure is the harness's.
                over = sum(1 for r in rs if not r["ok"] and r.get("overflowed"))
                failures += [
                    f"{w.key} {side} #{i + 1}: {r['detail']}"
                    for r in rs
                    if not r["ok"] and (args.smoke or not r.get("overflowed"))
                ]
                runs[side] += good
                by_round[i][side] = good
                tally[side]["turns"] += len(rs)
                tally[side]["overflowed"] += over
                shown = f": {figures_text(figures(good, p.n))}" if good else ""
                overflowed = f" ({over} overflowed)" if over else ""
                print(f"  {side:<6} #{i + 1}: {len(good)}/{len(rs)} turns whole{overflowed}{shown}", flush=True)
        if all(runs[side] for side in ORDER):
            pairs = [
                (figures(r["base"], p.n), figures(r["new"], p.n), figures(r["traced"], p.n))
                for r in by_round
                if all(r[side] for side in ORDER)
            ]
            fig = [figures(runs[side], p.n) for side in ORDER]
            rows += rows_of(w, fig[0], fig[1], fig[2], pairs, p.n)
        over_text = {side: f"{t['overflowed']} of {t['turns']}" for side, t in tally.items()}
        over = [over_text["base"], over_text["new"], "-", "-", over_text["traced"], "-", "-", "-", ""]
        rows.append([w.name, "turns that overflowed (left out above)", *over])
    if rows:
        print_table(rows)
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")
    if failures:
        print(f"\n{len(failures)} failure(s):\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    print("smoke run: every turn came out whole" if args.smoke else "all turns came out whole")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
