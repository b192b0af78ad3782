"""Every Python code block of the user docs runs as a user would paste it
(the twin of __test__/docs/blocks.test.mjs, which runs the Node ones and
checks that every block of README.md, python/README.md and docs/*.md says
what it is). Each block carries a marker, `<!-- test: WHAT -->` on the line
before its fence (CONTRIBUTING.md, "The docs' code blocks", lists them);
the blocks run in order, in one scratch project: a fresh venv,
python/.venv-docs, where the pages' own install lines run. A clone's
`./python` there is the wheel `dev.py test` built from it (python/dist), so
that the check does not build the package a second time.

    python/.venv/bin/python -m pytest python/tests/test_docs.py    (after python3 python/dev.py test has built the wheel)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import venv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / "python" / ".venv-docs"
PROJECT = VENV / "your-project"
DIST = ROOT / "python" / "dist"


@dataclass
class Block:
    file: str
    line: int
    lang: str
    body: str
    marker: str | None

    @property
    def kind(self) -> str | None:
        if self.marker is None:
            return None
        m = re.match(
            r"(not run|part of|run|save|output|printed|spans|picture|file|shell|scenario|json|messages of|message of)\b:?\s*",
            self.marker,
        )
        return m.group(1) if m else "unknown"

    @property
    def rest(self) -> str:
        assert self.marker is not None and self.kind is not None
        return self.marker[len(self.kind) :].lstrip(":").strip()


def pages() -> list[str]:
    return ["README.md", "python/README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]


def blocks(file: str) -> list[Block]:
    """The fenced blocks of a page, with the marker before each (scripts/lib/doc-blocks.mjs's rules)."""
    lines = (ROOT / file).read_text().split("\n")
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = re.match(r"^( *)```(\w*)(.*)$", lines[i])
        if not m:
            i += 1
            continue
        indent = len(m.group(1))
        body: list[str] = []
        j = i + 1
        while not re.match(rf"^ {{0,{indent}}}```\s*$", lines[j]):
            line = lines[j]
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))) :])
            j += 1
        marker = None
        if i > 0 and re.search(r"-->\s*$", lines[i - 1]):
            k = i - 1
            while k > 0 and "<!--" not in lines[k]:
                k -= 1
            comment = "\n".join(line.strip() for line in lines[k:i])
            found = re.fullmatch(r"<!--\s*test:\s*(.*?)\s*-->", comment, re.S)
            marker = found.group(1) if found else None
        out.append(Block(file, i + 1, m.group(2), "\n".join(body) + "\n" if body else "", marker))
        i = j + 1
    return out


def owned() -> list[Block]:
    """The blocks this file runs (doc-blocks.mjs's `ownerOf`, for Python)."""
    mine: list[Block] = []
    previous: Block | None = None
    for file in pages():
        for b in blocks(file):
            kind = b.kind
            python = b.lang == "python"
            if kind in ("messages of", "message of"):
                python = "python" in b.file
            elif kind == "shell":
                python = b.rest.startswith("python")
            elif kind == "picture":
                python = b.rest.endswith(".py")
            elif kind in ("output", "printed", "spans"):
                python = previous is not None and previous.lang == "python"
            if kind in ("run", "part of"):
                previous = b
            if python and kind not in (None, "unknown", "not run"):
                mine.append(b)
    return mine


BLOCKS = owned()


# ---------------------------------------------------------------- the scratch project


def python() -> Path:
    return VENV / "bin" / "python"


def wheel() -> Path:
    found = sorted(DIST.glob("koma_sdk-*.whl"))
    if len(found) != 1:
        pytest.fail(f"one wheel in {DIST} (python3 python/dev.py test builds it), found {found}")
    return found[0]


def user_env(home: Path) -> dict[str, str]:
    """A user's environment: none of this repository's switches; koma-sim unpaced, at home in the test's folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KOMA_", "PYTEST_", "PYTHONPATH", "VIRTUAL_ENV"))}
    env["PATH"] = f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return {**env, "KOMA_SIM_HOME": str(home), "KOMA_SIM_DELAY_MS": "0"}


@dataclass
class Last:
    name: str = ""
    stdout: str = ""


LAST = Last()
HOME = Path(tempfile.mkdtemp(prefix="koma-docs-home-"))


@pytest.fixture(scope="module", autouse=True)
def project() -> Any:
    """A fresh venv with nothing in it but pip, and its folder for the pages' files."""
    if VENV.exists():
        shutil.rmtree(VENV)
    venv.EnvBuilder(with_pip=True).create(VENV)
    PROJECT.mkdir()
    yield
    shutil.rmtree(HOME, ignore_errors=True)


def ran(name: str, r: subprocess.CompletedProcess[str]) -> None:
    assert r.returncode == 0, f"{name} exited {r.returncode}:\n{r.stdout}{r.stderr}"


# ---------------------------------------------------------------- the wholes


def indented(body: str, by: str) -> str:
    return "".join(f"{by}{line}\n" if line.strip() else "\n" for line in body.splitlines())


def whole(name: str, body: str) -> tuple[str, str]:
    """The program a fragment is part of, and its file name. `client`: a
    client of koma-sim with a session, in `async with`; `client, detached`:
    the same after one turn and `detach()` (a loop over `events()` then
    ends); `pytest`: a test with the `fake_koma` fixture, `pytest`,
    `KomaError` and koma_sdk.testing's classes."""
    if name in ("client", "client, detached"):
        after = '        await client.run("read the README", on_approval="deny")\n        await client.detach()\n'
        program = (
            "import asyncio\n\nimport koma_sdk\nfrom koma_sdk import *\nfrom koma_sdk.sim import path\n\n\n"
            "async def main() -> None:\n    async with Client(path()) as client:\n        await client.create()\n"
            + (after if name == "client, detached" else "")
            + indented(body, "        ")
            + "\n\nasyncio.run(main())\n"
        )
        return program, "snippet.py"
    if name == "pytest":
        program = (
            "import pytest\n\nfrom koma_sdk import KomaError\nfrom koma_sdk.testing import *\n\n\n"
            "@pytest.mark.anyio\nasync def test_the_snippet(fake_koma):\n" + indented(body, "    ")
        )
        return program, "test_snippet.py"
    pytest.fail(f"no whole named {name}")


def run_file(name: str, source: str) -> subprocess.CompletedProcess[str]:
    (PROJECT / name).write_text(source)
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", name] if name.startswith("test_") else [name]
    r = subprocess.run(
        [str(python()), *args], cwd=PROJECT, env=user_env(HOME), capture_output=True, text=True, timeout=170
    )
    ran(name, r)
    LAST.name, LAST.stdout = name, r.stdout
    return r


# ---------------------------------------------------------------- spans


def drawn_rows(text: str) -> list[tuple[int, str, list[str]]]:
    """The tree a page draws: `(depth, name, links)` per row (see blocks.test.mjs)."""
    rows = []
    for row in text.rstrip().split("\n"):
        label, *more = row.split("|")
        depth = (len(label) - len(label.lstrip())) // 2
        tail = "|".join(more[2:]) if more else label
        links = [m.strip() for m in re.findall(r"link: (.+?)(?=\s+link: |$)", tail)]
        rows.append((depth, re.sub(r"\s+link: .*$", "", label).strip(), links))
    return rows


def exported(stdout: str) -> list[dict[str, Any]]:
    """The spans the console exporter printed (a JSON object each, among the program's other lines)."""
    decoder = json.JSONDecoder()
    spans, i = [], 0
    while (i := stdout.find("{", i)) >= 0:
        try:
            value, end = decoder.raw_decode(stdout, i)
        except json.JSONDecodeError:
            i += 1
            continue
        if isinstance(value, dict) and "context" in value and "parent_id" in value:
            spans.append(value)
        i = end
    return spans


def tree_rows(spans: list[dict[str, Any]], order: list[str]) -> list[tuple[int, str, list[str]]]:
    by_id = {s["context"]["span_id"]: s for s in spans}
    roots = [s for s in spans if s["parent_id"] not in by_id]
    roots.sort(key=lambda s: (order.index(s["name"]) if s["name"] in order else len(order), s["start_time"]))
    rows: list[tuple[int, str, list[str]]] = []

    def walk(s: dict[str, Any], depth: int) -> None:
        links = [
            by_id[link["context"]["span_id"]]["name"] for link in s["links"] if link["context"]["span_id"] in by_id
        ]
        rows.append((depth, s["name"], links if depth == 0 else []))
        children = [c for c in spans if c["parent_id"] == s["context"]["span_id"]]
        for c in sorted(children, key=lambda c: c["start_time"]):
            walk(c, depth + 1)

    for r in roots:
        walk(r, 0)
    return rows


# ---------------------------------------------------------------- messages


def pattern(message: str) -> str:
    return "^" + ".*".join(re.escape(p) for p in message.split("...")) + "$"


def messages(header: str, inputs: list[str]) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="koma-docs-messages-") as d:
        scenario = Path(d) / "s.json"
        if header.startswith("check_scenario"):
            program = (
                "import json\nfrom koma_sdk.testing import *\nout = []\n"
                f"for make in [{', '.join(f'lambda: {i}' for i in inputs)}]:\n"
                "    try:\n        check_scenario(make())\n        out.append('no mistake')\n"
                "    except Exception as e:\n        out.append(str(e))\nprint(json.dumps(out))\n"
            )
        elif header.startswith("a client's first call, KOMA_SIM_SCENARIO=/tmp/s.json"):
            program = (
                "import asyncio, json\nfrom koma_sdk import Client, KomaError\nfrom koma_sdk.sim import path\n"
                f"SCENARIO = {str(scenario)!r}\nout = []\n\n\nasync def main():\n"
                f"    for s in [{', '.join(inputs)}]:\n"
                "        open(SCENARIO, 'w').write(json.dumps(s))\n"
                "        async with Client(path(), env={'KOMA_SIM_SCENARIO': SCENARIO}) as client:\n"
                "            try:\n                await client.create()\n                out.append('no error')\n"
                "            except KomaError as e:\n                out.append(e.message.replace(SCENARIO, '/tmp/s.json'))\n"
                "\n\nasyncio.run(main())\nprint(json.dumps(out))\n"
            )
        else:
            pytest.fail(f'no way to make messages "{header}"')
        r = run_file("messages.py", program)
        return list(json.loads(r.stdout))


# ---------------------------------------------------------------- the blocks


@pytest.mark.timeout(300)
@pytest.mark.parametrize("block", BLOCKS, ids=[f"{b.file}:{b.line}" for b in BLOCKS])
def test_the_block_runs_as_pasted(block: Block) -> None:
    kind, rest = block.kind, block.rest
    if kind == "shell":
        # The lines a user pastes, in the project; a clone's ./python is its built wheel.
        skip = re.search(r'skip "([^"]+)"', rest)
        lines = [line for line in block.body.splitlines() if not (skip and skip.group(1) in line)]
        script = "\n".join(re.sub(r"\./python\b", str(wheel()), line) for line in lines)
        script = re.sub(r"\bcd koma-sdk\b", "true", script)  # (the clone is where the test runs)
        r = subprocess.run(
            ["bash", "-eo", "pipefail", "-c", script],
            cwd=PROJECT,
            env=user_env(HOME),
            capture_output=True,
            text=True,
            timeout=280,
        )
        assert r.returncode == 0, f"{script}\n{r.stdout}{r.stderr}"
        return
    if kind == "save":
        (PROJECT / rest).write_text(block.body)
        return
    if kind == "run":
        run_file(rest, block.body)
        return
    if kind == "part of":
        source, name = whole(rest, block.body)
        run_file(name, source)
        return
    if kind == "output":
        session = re.compile(r"\bs-[0-9a-f]+-[0-9a-f]+\b")
        assert session.sub("s-<session>", LAST.stdout) == session.sub("s-<session>", block.body), LAST.name
        return
    if kind == "printed":
        for line in block.body.rstrip().split("\n"):
            assert line.strip() in LAST.stdout, f"{LAST.name} printed {line}"
        return
    if kind == "spans":
        drawn = drawn_rows(block.body)
        spans = exported(LAST.stdout)
        assert spans, f"{LAST.name} printed its spans (ConsoleSpanExporter)"
        assert tree_rows(spans, [n for d, n, _ in drawn if d == 0]) == drawn, LAST.name
        return
    if kind == "picture":
        env = {k: v for k, v in os.environ.items() if k != "KOMA_SIM_PATH"}
        script = ROOT / rest
        r = subprocess.run([sys.executable, str(script)], cwd=script.parent, env=env, capture_output=True, text=True)
        ran(rest, r)
        assert drawn_rows(r.stdout) == drawn_rows(block.body), rest

        def attrs(text: str) -> list[str]:
            return [re.sub(r"^\s*[\d.]+ ms\s*", "", row.split("|")[2]) for row in text.rstrip().split("\n")]

        assert attrs(r.stdout) == attrs(block.body), rest
        return
    if kind == "file":
        what, *opts = [p.strip() for p in rest.split(",")]
        assert block.body == (ROOT / what).read_text(), f"the block is {what} as it is"
        (PROJECT / Path(what).name).write_text(block.body)
        if "run by pytest" in opts:
            run_file(Path(what).name, block.body)
        return
    if kind in ("messages of", "message of"):
        header, *inputs = rest.split("\n")
        shown = [block.body.rstrip()] if kind == "message of" else block.body.rstrip().split("\n")
        assert len(inputs) == len(shown), "an input for each message"
        for got, message in zip(messages(header, inputs), shown, strict=True):
            assert re.match(pattern(message), got, re.S), f"{got!r} is not {message!r}"
        return
    pytest.fail(f'unknown marker "{block.marker}"')


def test_the_pages_have_python_blocks_to_run() -> None:
    assert len(BLOCKS) >= 15, [f"{b.file}:{b.line}" for b in BLOCKS]
