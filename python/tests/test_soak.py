"""The short slice of `python3 python/dev.py soak` (python/bench/soak.py, the twin
of soak.test.mjs): RSS flat, long strings bounded, no process, zombie or
descriptor left, every request answered."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SOAK = Path(__file__).resolve().parents[1] / "bench" / "soak.py"


def test_soak_strings_and_churn_short_version() -> None:
    r = subprocess.run([sys.executable, str(SOAK), "--short"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "processes left: 0 (zombies: 0)" in r.stdout, r.stdout
    assert "8 clients at once, 100 requests each: 800 of 800 answered" in r.stdout, r.stdout
    assert r.stdout.rstrip().endswith("soak: ok"), r.stdout
