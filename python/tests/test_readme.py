"""python/README.md is the package's PyPI page: it installs from a clone
while the index has no release, and says so; its first program runs as
pasted, against the koma-sim inside the installed package, prints what the
page shows it prints, passes `mypy --strict` and leaves nothing behind; and
the page points nowhere a reader of PyPI cannot follow."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
PACKAGE_JSON = Path(__file__).resolve().parents[2] / "package.json"
# The session id koma-sim makes, new in every run.
SESSION_ID = re.compile(r"\bs-[0-9a-f]+-[0-9a-f]+\b")


def first_program() -> str:
    text = README.read_text()
    after = text.split("This program runs as pasted", 1)[1]
    match = re.search(r"```python\n(.*?)```", after, re.S)
    assert match, "no python block after 'This program runs as pasted'"
    return match.group(1)


def shown_output() -> str:
    """The text block right after the first program: what the page says it prints."""
    after = README.read_text().split("This program runs as pasted", 1)[1]
    match = re.search(r"```python\n.*?```\n(.*?)```text\n(.*?)```", after, re.S)
    assert match, "no text block after the first program"
    assert "```" not in match.group(1), "another block between the program and its output"
    return match.group(2)


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
    assert SESSION_ID.sub("<session>", r.stdout) == SESSION_ID.sub("<session>", shown_output())


def test_the_readme_installs_from_a_clone_and_says_the_index_has_no_release_yet() -> None:
    text = README.read_text()
    install = text.split("## Install", 1)[1].split("\n## ", 1)[0]
    first = re.search(r"```sh\n(.*?)```", install, re.S)
    assert first, "a command under Install"
    assert "pip install ./python" in first.group(1), "the first commands install from a clone"
    assert "pip install koma-sdk" not in first.group(1)
    assert "no release on PyPI yet" in install.split("```", 1)[0], "said before the commands"


def test_the_readme_program_is_mypy_strict_clean_and_leaves_no_folder(tmp_path: Path) -> None:
    program = tmp_path / "first.py"
    program.write_text(first_program())
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(program)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    # Run with a temporary directory of its own: nothing is left in it.
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KOMA_SIM", "KOMA_SDK"))}
    r = subprocess.run(
        [sys.executable, str(program)],
        cwd=tmp_path,
        env={**env, "TMPDIR": str(tmp)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert list(tmp.iterdir()) == [], "the program leaves nothing in the temporary directory"


def test_the_readme_points_nowhere_outside_the_package() -> None:
    text = README.read_text()
    assert "(#)" not in text, "an empty link"
    assert "koma-protocol" not in text, "a file outside the repository"  # citation-check: the pattern
    # The repository (as package.json names it) and the index, nothing else.
    repository = re.sub(r"^git\+|\.git$", "", json.loads(PACKAGE_JSON.read_text())["repository"]["url"])
    for url in re.findall(r"https?://[^\s)>\]]+", text):
        assert url.rstrip(".,:;").startswith((repository, "https://pypi.org/project/koma-sdk")), url
    # A relative link is broken on the index's page.
    for target in re.findall(r"\]\(([^)]*)\)", text):
        assert re.match(r"https?://", target), f"a relative link: ({target})"
