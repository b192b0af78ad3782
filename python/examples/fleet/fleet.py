"""Koma agents as a fleet on Ray.

One async actor per worker (`Agents`) runs tasks, each as one turn of a
session of its own: a koma process started for the task, in the task's
folder, and closed when the task ends, however it ends. The driver hands
the tasks out (`submit`) and gathers every task's outcome (`gather`): the
turn's `TurnResult`, or the `KomaError` it ended with, pickled on the way
with its class, code, message, remote error and result so far.

Which way an error travels says what Ray does with it: a task whose koma
died in the middle of the turn (`transport_failure`) raises, so that Ray
runs it again (`max_task_retries`); every other outcome is returned, since
another attempt would end the same way.

    python fleet.py --sim                      # a local Ray cluster, 20 tasks, koma-sim on each worker
    python fleet.py --address auto --tasks 200 # a running cluster, koma on each worker's PATH

See docs/scale.md, "Beyond one machine".
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import sys
import time
from collections import Counter, deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import ray
from ray.actor import ActorHandle
from ray.exceptions import RayTaskError

from koma_sdk import Client, ClientClosed, Decision, KomaError, TransportFailure, TurnResult

Outcome = TurnResult | KomaError


@dataclass(frozen=True)
class Task:
    """One unit of work: `text` is the turn's text; `cwd` the folder on the
    worker where the agent works (None: the worker's own); `timeout` the
    turn's deadline in seconds (None: the worker's default)."""

    id: str
    text: str
    cwd: str | None = None
    timeout: float | None = None


@ray.remote
class Agents:
    """One per worker: runs up to `max_concurrency` tasks at once, each as a
    turn of a koma of its own. `executable` is koma on this worker (a name on
    its PATH, a path, or a wrapper script: docs/remote.md); None is the
    stand-in inside koma_sdk, koma-sim, found on this worker. `env` is added
    to koma's environment; `on_approval` answers every approval (nobody
    watches a fleet); `timeout` bounds a turn, in seconds."""

    def __init__(
        self,
        executable: str | None = "koma",
        env: Mapping[str, str] | None = None,
        on_approval: Decision = "deny",
        timeout: float | None = None,
    ) -> None:
        if executable is None:
            from koma_sdk.sim import path

            executable = path()
        self.executable = executable
        self.env = dict(env or {})
        self.on_approval: Decision = on_approval
        self.timeout = timeout
        #: The clients of the tasks running now, by task id.
        self.clients: dict[str, Client] = {}
        #: Set once a task's turn has started, by task id, while it runs or is waited for.
        self.started: dict[str, asyncio.Event] = {}
        #: The tasks over most recently (a worker runs for long: not all of them).
        self.ended: deque[str] = deque(maxlen=10_000)
        self.closing = False

    @ray.method(retry_exceptions=[TransportFailure])
    async def run(self, task: Task) -> Outcome:
        """The task's turn in a session of its own: its result, or the error it ended with."""
        if self.closing:
            return ClientClosed(f"task {task.id}: the worker is shutting down")
        client = Client(self.executable, cwd=task.cwd, env=self.env)
        self.clients[task.id] = client
        try:
            async with client:
                await client.create(cwd=task.cwd)
                timeout = self.timeout if task.timeout is None else task.timeout
                turn = client.turn(task.text, on_approval=self.on_approval, timeout=timeout)
                try:
                    await turn.id()
                    self._started(task.id).set()
                    return await turn.result()
                except asyncio.CancelledError:
                    # ray.cancel(): the agent stops its work, then the client closes.
                    with contextlib.suppress(KomaError):
                        await turn.interrupt()
                    raise
        except KomaError as e:
            if sys.version_info >= (3, 11):  # where the error happened, in its traceback
                e.add_note(f"task {task.id} on {socket.gethostname()}, worker pid {os.getpid()}")
            if isinstance(e, TransportFailure) and not self.closing:
                raise  # Ray runs the task again
            return e
        finally:
            self.clients.pop(task.id, None)
            self.ended.append(task.id)
            self.started.pop(task.id, asyncio.Event()).set()

    def _started(self, task_id: str) -> asyncio.Event:
        return self.started.setdefault(task_id, asyncio.Event())

    async def wait_started(self, task_id: str) -> int | None:
        """Waits until the task's turn has started here, or the task is
        over; its koma's process id, or None once the task is over."""
        if task_id not in self.ended:
            await self._started(task_id).wait()
        client = self.clients.get(task_id)
        return None if client is None else client.pid

    async def close(self) -> int:
        """A graceful shutdown: no more tasks start, and every client is
        closed (koma ends a running turn, `interrupted`, and exits). How many
        were open."""
        self.closing = True
        clients = list(self.clients.values())
        await asyncio.gather(*(client.close() for client in clients))
        return len(clients)

    def pid(self) -> int:
        """This worker's process id."""
        return os.getpid()


def start_workers(
    n: int,
    *,
    agents: int = 4,
    retries: int = 2,
    executable: str | None = "koma",
    env: Mapping[str, str] | None = None,
    on_approval: Decision = "deny",
    timeout: float | None = None,
) -> list[ActorHandle]:
    """`n` workers (one CPU each, spread over the cluster's nodes), each
    running up to `agents` tasks at once. A task is tried `retries` more
    times if its koma died in the middle, and if its worker died (which
    Ray restarts once)."""
    options: dict[str, Any] = {
        "num_cpus": 1,
        "max_concurrency": agents,
        "max_restarts": 1,
        "max_task_retries": retries,
        "scheduling_strategy": "SPREAD",
    }
    return [Agents.options(**options).remote(executable, env, on_approval, timeout) for _ in range(n)]


def submit(tasks: Sequence[Task], workers: Sequence[ActorHandle]) -> dict[ray.ObjectRef, str]:
    """Hands the tasks out to the workers in turn; the task id of each reference."""
    return {workers[i % len(workers)].run.remote(task): task.id for i, task in enumerate(tasks)}


def outcome(ref: ray.ObjectRef) -> Outcome:
    """A task's outcome. After Ray's last retry, `ray.get()` raises the
    error as a `RayTaskError(KomaError)` (which `except KomaError` takes);
    its `cause` is the error as the worker raised it."""
    try:
        value: Outcome = ray.get(ref)
        return value
    except RayTaskError as e:
        if isinstance(e.cause, KomaError):
            return e.cause
        raise


def gather(refs: Mapping[ray.ObjectRef, str]) -> Iterator[tuple[str, Outcome]]:
    """Every task's (id, outcome), in the order they finish."""
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for ref in done:
            yield refs[ref], outcome(ref)


def describe(value: Outcome) -> str:
    if isinstance(value, KomaError):
        kept = f"; the turn so far: {value.result.output[:60]!r}" if value.result else ""
        return f"{type(value).__name__} {value.code}: {value.message[:100]}{kept}"
    return f"{value.status}: {value.output[:100]}"


def demo_tasks(n: int) -> list[Task]:
    """Tasks for koma-sim's keyword agent: reads, and fixes that ask for approval."""
    verbs = ["read", "fix", "look at", "show"]
    return [Task(f"task-{i:03d}", f"{verbs[i % len(verbs)]} src/module_{i}.py") for i in range(n)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--address", help="a running Ray cluster (`auto`); by default a local one is started")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--agents", type=int, default=4, help="tasks at once on each worker")
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=600.0, help="a turn's deadline, seconds")
    parser.add_argument("--sim", action="store_true", help="koma-sim (inside koma_sdk) in place of koma")
    parser.add_argument("--pace-ms", type=int, default=120, help="with --sim: koma-sim's wait before each step")
    args = parser.parse_args(argv)

    # koma-sim keeps its sessions in memory (KOMA_SIM_SAVE=0): nothing is written on the workers.
    env = {"KOMA_SIM_DELAY_MS": str(args.pace_ms), "KOMA_SIM_SAVE": "0"} if args.sim else {}
    # A cluster of this machine (`ray start`, RAY_ADDRESS) is joined; else a local one is started.
    ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
    try:
        workers = start_workers(
            args.workers, agents=args.agents, executable=None if args.sim else "koma", env=env, timeout=args.timeout
        )
        started = time.monotonic()
        codes: Counter[str] = Counter()
        for task_id, value in gather(submit(demo_tasks(args.tasks), workers)):
            codes[value.code if isinstance(value, KomaError) else value.status] += 1
            print(f"{task_id}  {describe(value)}", flush=True)
        seconds = time.monotonic() - started
        ray.get([worker.close.remote() for worker in workers])
    finally:
        ray.shutdown()
    summary = ", ".join(f"{n} {what}" for what, n in sorted(codes.items()))
    print(f"{args.tasks} tasks on {args.workers} workers in {seconds:.1f} s ({args.tasks / seconds:.1f}/s): {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
