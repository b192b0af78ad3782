"""python/README.md is the package's PyPI page: its first program runs as
pasted, against the koma-sim inside the installed package, and prints what
the page says it prints; and the page points nowhere a reader of PyPI
cannot follow."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def first_program() -> str:
    text = README.read_text()
    after = text.split("This program runs as pasted", 1)[1]
    match = re.search(r"```python\n(.*?)```", after, re.S)
    assert match, "no python block after 'This program runs as pasted'"
    return match.group(1)


def test_the_readme_program_runs_as_pasted(tmp_path: Path) -> None:
    program = tmp_path / "first.py"
    program.write_text(first_program())
    # As a user runs it: nothing of the test suite's environment (the
    # package's own koma-sim, not a checkout's; no switches).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KOMA_SIM", "KOMA_SDK"))}
    r = subprocess.run(
        [sys.executable, str(program)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("1 "), lines  # hello.protocol, version, capabilities
    assert "'submit'" in lines[0], lines
    assert lines[1].endswith(" idle"), lines  # the new session, idle
    assert lines[2].startswith("completed "), lines  # run(): its status and output
    assert lines[-1] == "remote unknown_approval", lines  # the comment beside that print says so
    assert r.stderr == "", r.stderr


def test_the_readme_points_nowhere_outside_the_package() -> None:
    text = README.read_text()
    assert "(#)" not in text, "an empty link"
    assert "koma-protocol" not in text, "a file outside the repository"
    assert re.findall(r"https?://\S+", text) == [], "a link a PyPI reader cannot rely on"
