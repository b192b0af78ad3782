"""The Ray example run as its docstring and docs/scale.md say, from a clone:
`python fleet.py --sim` starts a local Ray cluster, runs the demo tasks on
two workers, each with koma-sim found there (inside koma_sdk), and shuts the
cluster down; nothing of it is left."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from tree import become_subreaper, descendants

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fleet" / "fleet.py"


@pytest.mark.timeout(600)
def test_the_example_runs_as_documented() -> None:
    become_subreaper()  # what the example's cluster leaves behind is handed to this test
    ray_tmp = tempfile.mkdtemp(prefix="koma-ray-")
    env = {**os.environ, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    try:
        r = subprocess.run(
            [sys.executable, str(EXAMPLE), "--sim", "--tasks", "8", "--pace-ms", "0"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tempfile.gettempdir(),
            timeout=500,
        )
        left = [p for p in descendants() if p.state != "Z"]
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    done = sorted(line.split()[0] for line in lines if line.startswith("task-"))
    assert done == [f"task-{i:03d}" for i in range(8)], r.stdout
    assert all("completed: Sim reply" in line for line in lines if line.startswith("task-")), r.stdout
    assert lines[-1].startswith("8 tasks on 2 workers in ") and lines[-1].endswith(": 8 completed"), lines[-1]
    assert left == [], f"left after the example ended: {left}"
