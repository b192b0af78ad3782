"""The Ray example (python/examples/fleet/fleet.py) on a local Ray cluster
that the test starts and shuts down: two workers, tasks against koma-sim
scenarios (some crash in the middle of the turn, some time out, some crash
on their first attempt only), Ray's retries, ray.cancel, a worker killed in
the middle of a turn, and a graceful shutdown. The koma-sims are counted in
this test's own process tree (tree.py), never machine-wide."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Before Ray is imported: no token written into the home folder, no usage report.
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import ray  # noqa: E402
from ray.exceptions import TaskCancelledError  # noqa: E402
from tree import become_subreaper, descendants, gone, komas  # noqa: E402

from koma_sdk import KomaError, TransportFailure, TurnResult  # noqa: E402
from koma_sdk.sim import path as sim_path  # noqa: E402
from koma_sdk.testing import Contains, Crash, FakeKoma, Output, Pause, Scenario, ScriptedTurn  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fleet"
sys.path.insert(0, str(EXAMPLE))
import fleet  # noqa: E402

pytestmark = pytest.mark.timeout(600)

#: What every koma-sim plays: a text with "crash" dies of SIGKILL after one
#: output, one with "hang" pauses until it is interrupted, any other is the
#: keyword agent's.
SCENARIO = Scenario(
    turns=[
        ScriptedTurn([Output("Reading the code..."), Crash("SIGKILL")], match=Contains("crash"), times="always"),
        ScriptedTurn([Output("Thinking..."), Pause()], match=Contains("hang"), times="always"),
    ],
    unscripted="agent",
)
#: What a task's first attempt plays instead, when its folder says so.
FIRST_CRASHES = Scenario(turns=[ScriptedTurn([Output("Reading the code..."), Crash("SIGKILL")], times="always")])
FIRST_HANGS = Scenario(turns=[ScriptedTurn([Output("Thinking..."), Pause()], times="always")])

# koma-sim through a wrapper (docs/remote.md) that plays, in a task folder
# with a `first-attempt` file, the scenario that file names for the first
# koma started there (koma crashed or hung once; a new attempt goes well).
WRAPPER = Path(__file__).resolve().parents[2] / "testdata" / "fleet" / "first-attempt-koma"

RETRIES = 2


class Fleet:
    def __init__(self, root: Path, koma: FakeKoma, first_crashes: FakeKoma, first_hangs: FakeKoma) -> None:
        self.root = root
        self.koma = koma
        self.first = {"crashes": first_crashes, "hangs": first_hangs}
        env = {**koma.env, "KOMA_SIM": sim_path()}
        self.workers = fleet.start_workers(2, agents=4, retries=RETRIES, executable=str(WRAPPER), env=env)

    def folder(self, name: str, first: str | None = None) -> str:
        """A task's folder; `first`: what its first attempt plays ("crashes", "hangs")."""
        d = self.root / "tasks" / name
        d.mkdir(parents=True)
        if first is not None:
            (d / "first-attempt").write_text(str(self.first[first].scenario_path))
        return str(d)

    def submits(self) -> Counter[str]:
        """How many times each text was submitted, over every koma-sim."""
        return Counter(r.params["text"] for r in self.koma.calls("submit"))

    def requests_of(self, pid: int) -> list[str]:
        return [r.method for r in self.koma.requests() if r.pid == pid]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Fleet]:
    become_subreaper()
    ray_tmp = tempfile.mkdtemp(prefix="koma-ray-")  # short: Ray's socket paths live under it
    root = Path(tempfile.mkdtemp(prefix="koma-fleet-"))
    os.environ["RAY_TMPDIR"] = ray_tmp
    koma = FakeKoma(SCENARIO, dir=root / "koma")
    fakes = [FakeKoma(FIRST_CRASHES, dir=root / "first-crashes"), FakeKoma(FIRST_HANGS, dir=root / "first-hangs")]
    try:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            object_store_memory=100 * 1024 * 1024,
            runtime_env={"py_modules": [fleet]},
        )
        yield Fleet(root, koma, *fakes)
    finally:
        ray.shutdown()  # (done already by the last test, unless one failed first)
        for p in descendants():  # nothing may leak past the tests, even when one fails
            if p.state != "Z":
                os.kill(p.pid, signal.SIGKILL)
        shutil.rmtree(ray_tmp, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
        del os.environ["RAY_TMPDIR"]


def test_every_task_is_accounted_for(cluster: Fleet) -> None:
    tasks = {
        "done": [fleet.Task(f"done-{i}", f"{'read' if i % 2 else 'fix'} src/m{i}.py") for i in range(10)],
        "crash": [fleet.Task(f"crash-{i}", f"crash while refactoring m{i}") for i in range(3)],
        "flaky": [
            fleet.Task(f"flaky-{i}", f"read flaky/f{i}.py", cwd=cluster.folder(f"flaky-{i}", first="crashes"))
            for i in range(3)
        ],
        "timeout": [fleet.Task(f"timeout-{i}", f"hang on m{i}", timeout=1.0) for i in range(4)],
    }
    every = [task for kind in tasks.values() for task in kind]
    assert len(every) == 20
    refs = fleet.submit(every, cluster.workers)
    outcomes = dict(fleet.gather(refs))

    assert sorted(outcomes) == sorted(task.id for task in every), "every task accounted for, once"
    assert komas() == [], "every task's koma-sim is closed and gone"
    submits = cluster.submits()
    for task in tasks["done"]:
        result = outcomes[task.id]
        assert isinstance(result, TurnResult) and result.status == "completed", result
        assert f'you said "{task.text}"' in result.output
        if task.text.startswith("fix"):
            assert result.tool_calls[0].approval == "deny", "the fleet's approval policy"
        assert submits[task.text] == 1
    for task in tasks["crash"]:
        e = outcomes[task.id]
        assert type(e) is TransportFailure and e.code == "transport_failure", e
        assert "SIGKILL" in e.message or "signal" in e.message, e.message
        assert e.result is not None and e.result.output == "Reading the code...", "the turn so far crossed too"
        if sys.version_info >= (3, 11):
            assert any(task.id in note for note in e.__notes__), "the worker's note crossed too"
        assert submits[task.text] == 1 + RETRIES, "Ray ran it again, then gave up"
        with pytest.raises(KomaError) as raised:  # as ray.get() raises it: RayTaskError(KomaError)
            ray.get(next(ref for ref, task_id in refs.items() if task_id == task.id))
        assert raised.value.code == "transport_failure" and type(raised.value.cause) is TransportFailure
    for task in tasks["flaky"]:
        result = outcomes[task.id]
        assert isinstance(result, TurnResult) and result.status == "completed", result
        assert submits[task.text] == 2, "the first attempt crashed, Ray's retry went well"
        pids = {r.pid for r in cluster.koma.calls("submit") if r.params["text"] == task.text}
        assert len(pids) == 2, "each attempt had a koma of its own"
    for task in tasks["timeout"]:
        e = outcomes[task.id]
        assert isinstance(e, KomaError) and isinstance(e, TimeoutError) and e.code == "timeout", e
        assert e.result is not None and e.result.output == "Thinking..."
        assert submits[task.text] == 1, "a timeout is the task's outcome, not retried"


def test_ray_cancel_interrupts_the_turn_and_leaves_no_koma(cluster: Fleet) -> None:
    worker = cluster.workers[0]
    task = fleet.Task("cancelled", "hang until cancelled")
    ref = worker.run.remote(task)
    pid = ray.get(worker.wait_started.remote(task.id))
    assert pid is not None and [p.pid for p in komas()] == [pid]
    ray.cancel(ref)
    with pytest.raises(TaskCancelledError):
        ray.get(ref)
    assert komas() == [], "its koma-sim is closed and gone when ray.get() raises"
    methods = cluster.requests_of(pid)
    assert methods[-2:] == ["interrupt", "detach"], f"the turn was interrupted, then the client closed: {methods}"


def test_a_worker_killed_mid_turn_leaves_no_koma_and_ray_runs_its_task_again(cluster: Fleet) -> None:
    worker = cluster.workers[1]
    task = fleet.Task("killed", "read killed/k.py", cwd=cluster.folder("killed", first="hangs"))
    ref = worker.run.remote(task)
    koma_pid = ray.get(worker.wait_started.remote(task.id))
    worker_pid = ray.get(worker.pid.remote())
    assert koma_pid is not None and koma_pid in {p.pid for p in descendants(worker_pid)}
    os.kill(worker_pid, signal.SIGKILL)
    assert gone([koma_pid]) == [], "the worker's koma-sim died with it (parent-death signal)"
    result = fleet.outcome(ref)  # Ray restarted the worker and ran the task again there
    assert isinstance(result, TurnResult) and result.status == "completed", result
    assert cluster.submits()[task.text] == 2
    assert ray.get(worker.pid.remote()) != worker_pid, "a new worker process"
    assert komas() == []


def test_a_graceful_shutdown_closes_every_client(cluster: Fleet) -> None:
    tasks = [fleet.Task(f"long-{i}", f"hang in a long task {i}") for i in range(4)]
    refs = fleet.submit(tasks, cluster.workers)
    pids = [ray.get(cluster.workers[i % 2].wait_started.remote(task.id)) for i, task in enumerate(tasks)]
    assert sorted(p.pid for p in komas()) == sorted(pids)  # type: ignore[type-var]
    assert ray.get([worker.close.remote() for worker in cluster.workers]) == [2, 2]
    assert komas() == [], "every client closed, every koma-sim reaped, when close() returns"
    outcomes: dict[str, Any] = dict(fleet.gather(refs))
    for task in tasks:
        result = outcomes[task.id]
        assert isinstance(result, TurnResult) and result.status == "interrupted", result
    for pid in pids:
        assert cluster.requests_of(pid)[-1] == "detach", "closed gracefully: detach, not a signal"
    late = fleet.outcome(cluster.workers[0].run.remote(fleet.Task("late", "read late.py")))
    assert isinstance(late, KomaError) and late.code == "closed", late
    assert komas() == []


def test_nothing_is_left_after_ray_shutdown(cluster: Fleet) -> None:
    assert komas() == []
    ray.shutdown()
    # Ray's processes end as it stops them; the workers' may end a moment after the call returns.
    left = [p for p in descendants() if p.state != "Z"]
    assert gone([p.pid for p in left]) == [], f"left after ray.shutdown(): {left}"
    assert [p for p in descendants() if p.state != "Z"] == []
