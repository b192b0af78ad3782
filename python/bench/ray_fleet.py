"""The Ray example's throughput (python/examples/fleet/fleet.py): tasks per
second through a local Ray cluster of W workers running A tasks at once
each, every task a turn of a koma-sim of its own (the example's demo tasks
for koma-sim's keyword agent: reads, and fixes whose approval is denied),
in three runs:

  paced     KOMA_SIM_DELAY_MS=120 (koma-sim's default): 120 ms before each
            streamed step, about 1 s a turn, a stand-in for an agent that
            streams as it works; A = 4, then A = 32 (a real agent's turn is
            longer: the rate is then about W x A / its turn time)
  unpaced   KOMA_SIM_DELAY_MS=0, A = 4: what the fleet itself costs per task

and, for each, the same tasks in this one process (asyncio, W x A clients
at once, no Ray). A figure is the median of R rounds of N tasks, after one
warm-up round, from the first submit to the last outcome.

    python/.venv-fleet/bin/python python/bench/ray_fleet.py    (made by `python3 python/dev.py fleet`)
    options: --workers W (2), --rounds R (3), --quick (one round of fewer tasks)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import ray  # noqa: E402

from koma_sdk import Client, KomaError  # noqa: E402
from koma_sdk.sim import path as sim_path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "fleet"))
import fleet  # noqa: E402

#: (name, KOMA_SIM_DELAY_MS, tasks at once per worker, tasks per round)
RUNS = [("paced", 120, 4, 48), ("paced", 120, 32, 256), ("unpaced", 0, 4, 200)]


def env_of(pace_ms: int) -> dict[str, str]:
    return {"KOMA_SIM_DELAY_MS": str(pace_ms), "KOMA_SIM_SAVE": "0"}


def on_ray(tasks: list[fleet.Task], workers: list[ray.actor.ActorHandle]) -> float:
    started = time.monotonic()
    outcomes = dict(fleet.gather(fleet.submit(tasks, workers)))
    seconds = time.monotonic() - started
    check(outcomes, tasks)
    return seconds


async def _one_process(tasks: list[fleet.Task], at_once: int, env: dict[str, str]) -> dict[str, fleet.Outcome]:
    gate = asyncio.Semaphore(at_once)
    executable = sim_path()

    async def one(task: fleet.Task) -> tuple[str, fleet.Outcome]:
        async with gate, Client(executable, env=env) as client:
            try:
                await client.create()
                return task.id, await client.run(task.text, on_approval="deny")
            except KomaError as e:
                return task.id, e

    return dict(await asyncio.gather(*(one(task) for task in tasks)))


def in_one_process(tasks: list[fleet.Task], at_once: int, env: dict[str, str]) -> float:
    started = time.monotonic()
    outcomes = asyncio.run(_one_process(tasks, at_once, env))
    seconds = time.monotonic() - started
    check(outcomes, tasks)
    return seconds


def check(outcomes: dict[str, fleet.Outcome], tasks: list[fleet.Task]) -> None:
    ends = Counter(v.code if isinstance(v, KomaError) else v.status for v in outcomes.values())
    if sorted(outcomes) != sorted(t.id for t in tasks) or ends != Counter({"completed": len(tasks)}):
        sys.exit(f"not every task completed: {dict(ends)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one round of a quarter of the tasks")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds

    ray_tmp = tempfile.mkdtemp(prefix="koma-ray-")
    os.environ["RAY_TMPDIR"] = ray_tmp
    rows: list[tuple[str, int, int, int, list[float], list[float]]] = []
    try:
        ray.init(
            num_cpus=args.workers,
            include_dashboard=False,
            log_to_driver=False,
            object_store_memory=100 * 1024 * 1024,
            runtime_env={"py_modules": [fleet]},
        )
        for name, pace, agents, n in RUNS:
            at_once = args.workers * agents
            n = max(at_once, n // 4) if args.quick else n
            tasks = fleet.demo_tasks(n)
            workers = fleet.start_workers(args.workers, agents=agents, executable=None, env=env_of(pace))
            on_ray(tasks[:at_once], workers)  # warm-up: the workers' processes, imports, first spawns
            in_one_process(tasks[:at_once], at_once, env_of(pace))
            ray_s, local_s = [], []
            for _ in range(rounds):  # alternated, so that both see the machine's same moments
                ray_s.append(on_ray(tasks, workers))
                local_s.append(in_one_process(tasks, at_once, env_of(pace)))
            ray.get([w.close.remote() for w in workers])
            for w in workers:
                ray.kill(w)
            rows.append((name, pace, agents, n, ray_s, local_s))
    finally:
        ray.shutdown()
        shutil.rmtree(ray_tmp, ignore_errors=True)

    print(
        f"\nRay {ray.__version__}, {args.workers} workers; one process: as many tasks at once as the workers together"
    )
    print(
        "| koma-sim | at once per worker | tasks per round | Ray: tasks/s (median) | one process, no Ray: tasks/s | rounds (Ray; one process) |"
    )
    print("|---|---:|---:|---:|---:|---|")
    for name, pace, agents, n, ray_s, local_s in rows:
        each = ", ".join(f"{n / s:.1f}" for s in ray_s) + "; " + ", ".join(f"{n / s:.1f}" for s in local_s)
        ray_m, local_m = statistics.median(ray_s), statistics.median(local_s)
        print(f"| {name} ({pace} ms a step) | {agents} | {n} | {n / ray_m:.1f} | {n / local_m:.1f} | {each} |")


if __name__ == "__main__":
    main()
