#!/usr/bin/env python3
"""The Python package's quick start, run with the system python3 (3.10+):

    python3 python/dev.py test   # venv, build, pytest, mypy --strict, the wheel check
    python3 python/dev.py demo   # build, then python/examples/demo.py against koma-sim

`test` makes python/.venv if it is missing (kept between runs, like cargo's
cache), installs the pinned tools there, builds the wheel (release, with
koma-sim inside) through the package's own backend, installs it, runs
`pytest python/tests` (a run that collects no test fails), `mypy --strict`
on the typing usage files and on the package, and the wheel check: the
wheel's contents (the native module and koma-sim for this platform, nothing
else binary), then an install into a fresh venv with no network
(`--no-index`) and a turn against the koma-sim inside it.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import venv
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
VENV = HERE / ".venv"
DIST = HERE / "dist"
PINS = [
    "maturin==1.16.*",
    "pytest==9.2.*",
    "pytest-asyncio==1.5.*",
    # a bound on each test (conftest.py), so that a hang fails one test, not the run
    "pytest-timeout==2.4.*",
    "anyio==4.16.*",
    "trio==0.35.*",
    "mypy==2.4.*",
]


def step(name: str) -> None:
    print(f"\n=== {name}", flush=True)


def run(*cmd: str, **kw: object) -> None:
    r = subprocess.run(cmd, **kw)  # type: ignore[call-overload]
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)} (exit {r.returncode})")


def venv_python(where: Path) -> Path:
    return where / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv() -> Path:
    py = venv_python(VENV)
    stamp = VENV / ".koma-pins"
    if not py.exists():
        step(f"venv {VENV}")
        venv.EnvBuilder(with_pip=True).create(VENV)
    if not stamp.exists() or stamp.read_text() != "\n".join(PINS):
        step("pinned tools: " + ", ".join(PINS))
        run(str(py), "-m", "pip", "install", "--quiet", *PINS)
        stamp.write_text("\n".join(PINS))
    return py


def host() -> str:
    out = subprocess.run(["rustc", "-vV"], check=True, capture_output=True, text=True).stdout
    return next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("host: "))


def build(py: Path) -> Path:
    """The release wheel for this machine, through the package's backend (koma-sim inside); installed."""
    step("build the wheel (release, koma-sim inside)")
    if DIST.exists():
        shutil.rmtree(DIST)
    DIST.mkdir()
    env = dict(os.environ)
    env["PATH"] = f"{py.parent}{os.pathsep}{env.get('PATH', '')}"  # the venv's maturin
    # The workspace's cache for this machine's target, shared with the Node build.
    env.setdefault("MATURIN_PEP517_ARGS", f"--target {host()}")
    code = "import sys, koma_build; print(koma_build.build_wheel(sys.argv[1]))"
    run(str(py), "-c", code, str(DIST), cwd=HERE, env={**env, "PYTHONPATH": str(HERE / "_build")})
    wheels = glob.glob(str(DIST / "koma_sdk-*.whl"))
    if len(wheels) != 1:
        sys.exit(f"expected one wheel in {DIST}, found {wheels}")
    wheel = Path(wheels[0])
    step(f"install {wheel.name} into {VENV}")
    run(str(py), "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", str(wheel))
    return wheel


ELF_MACHINES = {"x86_64": 62, "aarch64": 183, "arm64": 183}


def binary_kind(data: bytes) -> str | None:
    """What binary a file is (ELF with its machine, Mach-O), or None for text."""
    if data[:4] == b"\x7fELF":
        return f"elf:{int.from_bytes(data[18:20], 'little')}"
    if data[:4] in (b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe"):
        return "mach-o"
    if b"\0" in data[:8192]:
        return "binary"
    return None


def check_contents(wheel: Path) -> None:
    step(f"wheel contents: {wheel.name}")
    import platform

    want = {"koma_sdk/_native.abi3.so", "koma_sdk/bin/koma-sim"}
    required = {
        "koma_sdk/__init__.py",
        "koma_sdk/py.typed",
        "koma_sdk/_native.pyi",
        "koma_sdk/sim.py",
        *want,
    }
    machine = ELF_MACHINES.get(platform.machine())
    problems = []
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        for name in sorted(names):
            kind = binary_kind(z.read(name))
            if kind is None:
                continue
            if name not in want:
                problems.append(f"{name}: an unexpected binary ({kind})")
            elif sys.platform.startswith("linux") and kind != f"elf:{machine}":
                problems.append(f"{name}: {kind}, not an ELF for {platform.machine()}")
            print(f"  {name}: {kind}")
        for name in sorted(required - names):
            problems.append(f"{name}: missing")
        if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
            problems.append("LICENSE: missing from the wheel's metadata")
        for name in sorted(names):
            if "/tests/" in name or name.startswith("tests/") or "__pycache__" in name:
                problems.append(f"{name}: not part of the package")
        info = z.getinfo("koma_sdk/bin/koma-sim")
        if not (info.external_attr >> 16) & 0o111:
            problems.append("koma_sdk/bin/koma-sim: not executable in the wheel")
    if problems:
        sys.exit("wheel check failed:\n  " + "\n  ".join(problems))
    print(f"  {len(names)} files; the two binaries are the native module and koma-sim for this platform")


OFFLINE_TURN = r"""
import asyncio, os, tempfile
from koma_sdk import Client
from koma_sdk.sim import path

async def main():
    home = tempfile.mkdtemp()
    async with Client(path(), env={"KOMA_SIM_HOME": home, "KOMA_SIM_DELAY_MS": "0"}) as client:
        hello = await client.probe()
        assert hello.protocol == 1, hello
        await client.create()
        result = await client.run("fix notes.txt", on_approval="allow")
        assert result.status == "completed", result
        assert result.tool_calls[0].approval == "allow", result
        print("a turn against the wheel's koma-sim:", result.status, "-", result.output)
    assert path().startswith(os.path.dirname(__import__("koma_sdk").__file__))

asyncio.run(main())
"""


def check_offline_install(wheel: Path) -> None:
    step("the wheel in a fresh venv, installed with no network (--no-index)")
    with tempfile.TemporaryDirectory(prefix="koma-sdk-wheel-") as d:
        fresh = Path(d) / "venv"
        venv.EnvBuilder(with_pip=True).create(fresh)
        py = venv_python(fresh)
        env = {k: v for k, v in os.environ.items() if k not in ("PIP_FIND_LINKS", "KOMA_SIM_PATH", "PYTHONPATH")}
        run(str(py), "-m", "pip", "install", "--quiet", "--no-index", str(wheel), env=env)
        run(str(py), "-c", OFFLINE_TURN, cwd=d, env=env)


def test() -> None:
    py = ensure_venv()
    wheel = build(py)
    env = {k: v for k, v in os.environ.items() if k != "KOMA_SIM_PATH"}
    step("pytest python/tests (asyncio and trio)")
    run(str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HERE / "tests"), cwd=ROOT, env=env)
    step("mypy --strict: the typing usage files and the package")
    usage = [p for p in (HERE / "tests" / "typing_usage.py", HERE / "tests" / "smoke" / "typing_smoke.py") if p.exists()]
    if not usage:
        sys.exit("no typing usage file to check (python/tests/typing_usage.py)")
    cache = str(VENV / ".mypy_cache")
    run(str(py), "-m", "mypy", "--strict", "--cache-dir", cache, *map(str, usage), cwd=ROOT)
    run(str(py), "-m", "mypy", "--strict", "--cache-dir", cache, "koma_sdk", cwd=HERE)
    check_contents(wheel)
    check_offline_install(wheel)
    step("benchmark smoke run (every workload briefly, no speed asserted)")
    run(str(py), str(HERE / "bench" / "run.py"), "--smoke", cwd=HERE, env=env)
    run(str(py), str(HERE / "bench" / "per_event.py"), "--smoke", cwd=HERE, env=env)
    run(str(py), str(HERE / "bench" / "turns.py"), "--smoke", cwd=HERE, env=env)
    print("\npython: tests, typings, the wheel check and the benchmark smoke run passed")


def check_wheel(args: list[str]) -> None:
    """`check-wheel WHEEL [--contents-only | --install-only]`: the release workflow's check of a built wheel."""
    wheels = [Path(a) for a in args if not a.startswith("--")]
    if len(wheels) != 1:
        sys.exit("usage: python3 python/dev.py check-wheel WHEEL [--contents-only | --install-only]")
    if "--install-only" not in args:
        check_contents(wheels[0])
    if "--contents-only" not in args:
        check_offline_install(wheels[0])


def demo() -> None:
    py = ensure_venv()
    build(py)
    step("python/examples/demo.py against koma-sim")
    env = {k: v for k, v in os.environ.items() if k != "KOMA_SIM_PATH"}
    run(str(py), str(HERE / "examples" / "demo.py"), cwd=ROOT, env=env)


def main() -> None:
    if sys.version_info < (3, 10):
        sys.exit("python/dev.py needs Python 3.10 or later")
    if len(sys.argv) >= 2 and sys.argv[1] == "check-wheel":
        check_wheel(sys.argv[2:])
        return
    commands = {"test": test, "demo": demo}
    if len(sys.argv) != 2 or sys.argv[1] not in commands:
        sys.exit("usage: python3 python/dev.py test|demo (or check-wheel WHEEL, for the release workflow)")
    commands[sys.argv[1]]()


if __name__ == "__main__":
    main()
