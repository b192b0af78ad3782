#!/usr/bin/env python3
"""The Python package's quick start, run with the system python3 (3.10+):

    python3 python/dev.py lint          # seconds, no build: ruff, mypy --strict on koma_sdk, schema/'s check and the generated files' stale check
    python3 python/dev.py test          # venv, build, lint, pytest, mypy --strict, the wheel and sdist checks
    python3 python/dev.py demo          # build, then python/examples/demo.py against koma-sim
    python3 python/dev.py check-sdist   # the sdist check alone
    python3 python/dev.py generate      # the files made from schema/ (needs Node.js; runs npm ci if needed)
    python3 python/dev.py fleet         # the Ray example's tests, in a venv of their own with Ray (--bench: its throughput)
    python3 python/dev.py soak          # build, then the endurance runs (python/bench/soak.py: events, strings, churn; --short, --loop trio)

`test` makes python/.venv if it is missing (kept between runs, like cargo's
cache), installs the pinned tools there, builds the wheel (release, with
koma-sim inside) through the package's own backend, installs it, runs
`pytest python/tests` (a run that collects no test fails), the tests that
differ between Python versions again under 3.10 and 3.13 (a venv each,
python/.venv-3.10 and .venv-3.13, made once), `mypy --strict`
on the typing usage files and on the package, and the wheel check: the
wheel's contents (the native module and koma-sim for this platform, both
stripped, nothing else binary; a manylinux tag that `auditwheel show`
agrees with; the repository's address in its metadata), then an install
into a fresh venv with no network (`--no-index`), a turn against the
koma-sim inside it, and the documented testing example
(python/examples/testing) run there by pytest. Then the sdist check: the sdist built, a wheel built
from it in isolation (`python -m build`), and that wheel checked the same
way. docs/python-internals.md says what each check proves.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
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
    # lint and format of the package, its tests, bench and scripts (settings in pyproject.toml)
    "ruff==0.17.3",
    # the wheel check's second opinion on the manylinux tag
    "auditwheel==6.8.*",
    # the sdist check: sdist, then a wheel from it, each in an isolated env
    "build==1.6.*",
    # the telemetry tests' in-memory exporters (koma_sdk[otel] needs only the API, which it brings)
    "opentelemetry-sdk==1.45.*",
]
# What the documented testing example needs beside koma_sdk
# (python/examples/testing): downloaded once into WHEELHOUSE, from which the
# wheel check installs them into its fresh venv with no network.
EXAMPLE_TOOLS = ["pytest==9.2.*", "anyio==4.16.*", "trio==0.35.*"]
# The tests whose behaviour differs between Python versions (the collector,
# what a frame keeps: leaving a loop over a Turn, python/tests/test_scope.py),
# run again under the oldest and the newest Python the package supports, each
# in a venv of its own (python/.venv-3.10, .venv-3.13: made once, kept as
# .venv is), with the tools they need and the abi3 wheel just built.
OTHER_PYTHONS = ["3.10", "3.13"]
OTHER_TESTS = ["test_scope.py"]
OTHER_PINS = ["pytest==9.2.*", "pytest-asyncio==1.5.*", "pytest-timeout==2.4.*", "anyio==4.16.*", "trio==0.35.*"]
WHEELHOUSE = VENV / "wheelhouse"
EXAMPLE = HERE / "examples" / "testing"
# The fleet tests (python/tests_fleet, the Ray example python/examples/fleet):
# a venv of their own, since Ray is no dependency of koma_sdk nor a tool of
# its suite (about 300 MB, kept between runs like VENV), with koma_sdk's
# wheel from this checkout.
FLEET_VENV = HERE / ".venv-fleet"
FLEET_PINS = ["ray==2.60.0", "pytest==9.2.*", "pytest-timeout==2.4.*"]


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


def maturin_args() -> str:
    """maturin's options for the wheels dev.py builds (through MATURIN_PEP517_ARGS)."""
    # --target: the workspace's cache for this machine's target, shared with
    # the Node build. --compatibility pypi: the lowest manylinux tag the
    # native module fits (through PEP 517 maturin's default is the plain
    # linux tag, which the index refuses). --locked: Cargo.lock as committed.
    return f"--target {host()} --compatibility pypi --locked"


def build(py: Path) -> Path:
    """The release wheel for this machine, through the package's backend (koma-sim inside); installed."""
    step("build the wheel (release, koma-sim inside)")
    if DIST.exists():
        shutil.rmtree(DIST)
    DIST.mkdir()
    env = dict(os.environ)
    env["PATH"] = f"{py.parent}{os.pathsep}{env.get('PATH', '')}"  # the venv's maturin
    env.setdefault("MATURIN_PEP517_ARGS", maturin_args())
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


MACHO_CPUS = {"x86_64": 0x01000007, "arm64": 0x0100000C}


PE_MACHINES = {"amd64": 0x8664, "arm64": 0xAA64}


def binary_kind(data: bytes) -> str | None:
    """What binary a file is (ELF or Mach-O, with its machine), or None for text."""
    if data[:4] == b"\x7fELF":
        return f"elf:{int.from_bytes(data[18:20], 'little')}"
    if data[:4] == b"\xcf\xfa\xed\xfe":
        return f"mach-o:{int.from_bytes(data[4:8], 'little')}"
    if data[:4] == b"\xca\xfe\xba\xbe":
        return "mach-o:universal"
    if data[:2] == b"MZ" and len(data) > 0x40:
        at = int.from_bytes(data[0x3C:0x40], "little")  # e_lfanew: the PE header
        if data[at : at + 4] == b"PE\0\0":
            return f"pe:{int.from_bytes(data[at + 4 : at + 6], 'little')}"
    if b"\0" in data[:8192]:
        return "binary"
    return None


def elf_sections(data: bytes) -> list[str]:
    """The section names of a 64-bit little-endian ELF file (every Linux target of the package)."""
    if data[4:6] != b"\x02\x01":
        raise ValueError("not a 64-bit little-endian ELF file")

    def num(at: int, size: int) -> int:
        return int.from_bytes(data[at : at + size], "little")

    shoff, shentsize, shnum, shstrndx = num(0x28, 8), num(0x3A, 2), num(0x3C, 2), num(0x3E, 2)
    names_at = num(shoff + shstrndx * shentsize + 0x18, 8)  # sh_offset of the section names
    out = []
    for i in range(shnum):
        start = names_at + num(shoff + i * shentsize, 4)  # sh_name
        out.append(data[start : data.index(b"\0", start)].decode())
    return out


def wanted_kind(platform_tag: str) -> str:
    """The binary_kind of a wheel's binaries, from its platform tag (manylinux_2_17_aarch64, macosx_11_0_arm64, win_amd64)."""
    if platform_tag.startswith("win_"):
        return f"pe:{PE_MACHINES.get(platform_tag[4:])}"
    arch = re.sub(r"^.*?_(x86_64|aarch64|arm64)$", r"\1", platform_tag)
    if platform_tag.startswith("macosx_"):
        return f"mach-o:{MACHO_CPUS.get(arch)}"
    return f"elf:{ELF_MACHINES.get(arch)}"


def macho_minos(data: bytes) -> tuple[int, int] | None:
    """The minimum macOS a 64-bit Mach-O file asks for (LC_BUILD_VERSION or LC_VERSION_MIN_MACOSX)."""
    at = 32
    for _ in range(int.from_bytes(data[16:20], "little")):
        cmd, size = int.from_bytes(data[at : at + 4], "little"), int.from_bytes(data[at + 4 : at + 8], "little")
        if cmd in (0x32, 0x24):
            v = int.from_bytes(data[at + (12 if cmd == 0x32 else 8) : at + (16 if cmd == 0x32 else 12)], "little")
            return (v >> 16, (v >> 8) & 0xFF)
        at += size
    return None


def macho_signed(data: bytes) -> bool | None:
    """Whether a 64-bit Mach-O file's code signature matches it (the hash of
    every page in its CodeDirectory); None when it has none. macOS on arm64
    kills a program without one, or with one a later strip left stale."""

    def le(at: int, n: int) -> int:
        return int.from_bytes(data[at : at + n], "little")

    def be(at: int, n: int) -> int:
        return int.from_bytes(data[at : at + n], "big")

    at = 32
    for _ in range(le(16, 4)):
        if le(at, 4) == 0x1D:  # LC_CODE_SIGNATURE
            sig = le(at + 8, 4)
            for i in range(be(sig + 8, 4) if be(sig, 4) == 0xFADE0CC0 else 0):
                cd = sig + be(sig + 12 + i * 8 + 4, 4)
                if be(cd, 4) != 0xFADE0C02:  # a CodeDirectory
                    continue
                hashes, slots, limit = be(cd + 16, 4), be(cd + 28, 4), be(cd + 32, 4)
                size, kind, page = data[cd + 36], data[cd + 37], 1 << data[cd + 39]
                algo = {1: "sha1", 2: "sha256"}.get(kind)
                return algo is not None and all(
                    hashlib.new(algo, data[n * page : min((n + 1) * page, limit)]).digest()[:size]
                    == data[cd + hashes + n * size : cd + hashes + (n + 1) * size]
                    for n in range(slots)
                )
            return False
        at += le(at + 4, 4)
    return None


def unstripped(data: bytes) -> list[str]:
    """What a stripped ELF binary has no more: its symbol table and debug sections."""
    return [s for s in elf_sections(data) if s == ".symtab" or s.startswith(".debug")]


# manylinux's legacy names, as glibc versions
LEGACY_TAGS = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def libc_tag(platform_tag: str) -> tuple[str, tuple[int, int]] | None:
    """("manylinux" or "musllinux", the libc version) of a platform tag, or None."""
    m = re.fullmatch(r"(manylinux|musllinux)_(\d+)_(\d+)_\w+", platform_tag)
    if m:
        return m.group(1), (int(m.group(2)), int(m.group(3)))
    m = re.fullmatch(r"(manylinux1|manylinux2010|manylinux2014)_\w+", platform_tag)
    return ("manylinux", LEGACY_TAGS[m.group(1)]) if m else None


def check_tag(wheel: Path, platforms: list[str]) -> list[str]:
    """A Linux wheel's platform tags: manylinux (or musllinux), and none older
    than the one `auditwheel show` finds the wheel's binaries consistent with."""
    problems = []
    for p in platforms:
        if libc_tag(p) is None:
            problems.append(f"platform tag {p}: not a manylinux or musllinux tag (the index refuses it)")
    if any(p.startswith("musllinux") for p in platforms) and not host_is_musl():
        # auditwheel judges by the C library of the machine it runs on: on a
        # glibc machine it takes musl's libc.so for a foreign library. The
        # release workflow checks musl wheels in Alpine (check-wheel there).
        print("  auditwheel show: not here (a glibc machine); the musllinux tag is checked on a musl machine")
        return problems
    auditwheel = ensure_venv().parent / "auditwheel"  # at dev.py's pin
    r = subprocess.run([str(auditwheel), "show", str(wheel)], capture_output=True, text=True)
    said = " ".join(r.stdout.split()) or r.stderr.strip()
    m = re.search(r'is consistent with the following platform tag: "([^"]+)"', said)
    found = libc_tag(m.group(1)) if m else None
    if r.returncode != 0 or m is None or found is None:
        return problems + [f"auditwheel show finds no manylinux or musllinux tag: {said}"]
    print(f"  auditwheel show: consistent with {m.group(1)}")
    for p in platforms:
        claimed = libc_tag(p)
        if claimed and (claimed[0] != found[0] or claimed[1] < found[1]):
            problems.append(f"platform tag {p}: auditwheel show finds the binaries need {m.group(1)}")
    return problems


def host_is_musl() -> bool:
    """Whether this Python runs on musl (Alpine), as packaging tells it."""
    import platform

    return platform.libc_ver()[0] != "glibc" and any(Path("/lib").glob("ld-musl-*.so.1"))


def repository_urls() -> tuple[str, str]:
    """The repository's address and its issues', as the root package.json names them."""
    manifest = json.loads((ROOT / "package.json").read_text())
    repo = re.sub(r"^git\+|\.git$", "", manifest["repository"]["url"])
    assert manifest["homepage"].startswith(repo), manifest["homepage"]
    return repo, manifest["bugs"]["url"]


def check_contents(wheel: Path, glibc_floor: tuple[int, int] | None = None) -> None:
    """The wheel's files, binaries and tags; with `glibc_floor`, a manylinux
    wheel's tag (which `auditwheel show` checks against its binaries' symbol
    versions) must be no newer than that glibc (release:dry --all passes the
    floor its builds are linked against)."""
    step(f"wheel contents: {wheel.name}")

    with zipfile.ZipFile(wheel) as z:
        windows = any(n.endswith(".dist-info/WHEEL") and "-win_" in z.read(n).decode() for n in z.namelist())
    # The Windows wheel's module and koma-sim are PE files (release:dry --all reads their imports).
    sim = "koma_sdk/bin/koma-sim.exe" if windows else "koma_sdk/bin/koma-sim"
    want = {"koma_sdk/_native.pyd" if windows else "koma_sdk/_native.abi3.so", sim}
    required = {
        "koma_sdk/__init__.py",
        "koma_sdk/py.typed",
        "koma_sdk/_native.pyi",
        "koma_sdk/sim.py",
        "koma_sdk/testing.py",
        "koma_sdk/_scenario.py",
        "koma_sdk/pytest_plugin.py",
        *want,
    }
    problems = []
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        info_dir = next((n.split("/")[0] for n in names if n.endswith(".dist-info/WHEEL")), None)
        if info_dir is None:
            sys.exit(f"wheel check failed: {wheel.name} has no .dist-info/WHEEL")
        tags = [
            line.split(": ", 1)[1]
            for line in z.read(f"{info_dir}/WHEEL").decode().splitlines()
            if line.startswith("Tag: ")
        ]
        platforms = sorted({t.split("-")[2] for t in tags})
        linux = all(p != "any" and not p.startswith(("macosx", "win")) for p in platforms)
        # The binaries are for the wheel's own platform, which need not be this machine's.
        kinds = {wanted_kind(p) for p in platforms}
        macos = [m.groups() for p in platforms if (m := re.fullmatch(r"macosx_(\d+)_(\d+)_\w+", p))]
        for name in sorted(names):
            data = z.read(name)
            kind = binary_kind(data)
            if kind is None:
                continue
            if name not in want:
                problems.append(f"{name}: an unexpected binary ({kind})")
            elif kinds != {kind}:
                problems.append(f"{name}: {kind}, not the {' or '.join(sorted(kinds))} of the wheel's tag")
            elif kind.startswith("mach-o:"):
                minos = macho_minos(data)
                if [(str(minos[0]), str(minos[1])) if minos else None] != macos:
                    problems.append(f"{name}: minimum macOS {minos}, not the {macos} of the wheel's tag")
                signed = macho_signed(data)
                if signed is False or (signed is None and kind == f"mach-o:{MACHO_CPUS['arm64']}"):
                    problems.append(f"{name}: {'a stale' if signed is False else 'no'} code signature (macOS kills it)")
            left = unstripped(data) if kind.startswith("elf:") else []
            if left:
                problems.append(f"{name}: not stripped ({', '.join(left[:4])}{', ...' if len(left) > 4 else ''})")
            print(
                f"  {name}: {kind}, {len(data):,} bytes{', stripped' if kind.startswith('elf:') and not left else ''}"
            )
        for name in sorted(required - names):
            problems.append(f"{name}: missing")
        if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
            problems.append("LICENSE: missing from the wheel's metadata")
        for name in sorted(names):
            if "/tests/" in name or name.startswith("tests/") or "__pycache__" in name:
                problems.append(f"{name}: not part of the package")
        info = z.getinfo(sim) if sim in names else None
        if info is not None and not windows and not (info.external_attr >> 16) & 0o111:
            problems.append(f"{sim}: not executable in the wheel")
        metadata = z.read(f"{info_dir}/METADATA").decode()
        entry_points = (
            z.read(f"{info_dir}/entry_points.txt").decode() if f"{info_dir}/entry_points.txt" in names else ""
        )
    if not re.search(r"^\[pytest11\]\n(?:.*\n)*?koma_sdk ?= ?koma_sdk\.pytest_plugin$", entry_points, re.M):
        problems.append(
            f"entry_points.txt: no pytest11 entry for koma_sdk.pytest_plugin (the fake_koma fixture): {entry_points!r}"
        )
    urls = {line.split(", ", 1)[1] for line in metadata.splitlines() if line.startswith("Project-URL: ")}
    repo, issues = repository_urls()
    if not {repo, issues} <= urls or any(not u.startswith(repo) for u in urls):
        problems.append(f"Project-URL: {sorted(urls)}, not the repository's {repo} and {issues} (package.json)")
    print(f"  platform tags: {', '.join(platforms)}; Project-URLs: {', '.join(sorted(urls))}")
    if linux:
        problems += check_tag(wheel, platforms)
    for p in platforms if glibc_floor else []:
        tag = libc_tag(p)
        if tag and tag[0] == "manylinux" and tag[1] > glibc_floor:
            problems.append(f"platform tag {p}: newer than the glibc floor, {glibc_floor[0]}.{glibc_floor[1]}")
    if problems:
        sys.exit("wheel check failed:\n  " + "\n  ".join(problems))
    print(f"  {len(names)} files; the two binaries are the native module and koma-sim for this platform")


OFFLINE_TURN = r"""
import asyncio, os, sys, tempfile
from importlib import metadata
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
    # OpenTelemetry is the extra koma_sdk[otel]: the install brought none of
    # it (nor any other dependency), and the package imported none of it.
    otel = [m for m in sys.modules if m.startswith("opentelemetry")]
    assert not otel, otel
    installed = sorted(d.metadata["Name"].lower() for d in metadata.distributions())
    assert [n for n in installed if n not in ("pip", "setuptools")] == ["koma-sdk"], installed
    requires = metadata.requires("koma-sdk") or []
    assert all("extra ==" in r for r in requires), requires
    print("installed: koma-sdk and nothing else; requires only", requires, "; no opentelemetry module imported")

asyncio.run(main())
"""


def ensure_wheelhouse() -> Path:
    """The wheels of EXAMPLE_TOOLS and their dependencies, for this Python,
    downloaded once (the only step of the wheel check that needs the index)."""
    stamp = WHEELHOUSE / ".koma-tools"
    want = "\n".join(EXAMPLE_TOOLS) + f"\n{sys.version_info[:2]}"
    if not stamp.exists() or stamp.read_text() != want:
        step("the testing example's tools, for the wheel check: " + ", ".join(EXAMPLE_TOOLS))
        if WHEELHOUSE.exists():
            shutil.rmtree(WHEELHOUSE)
        WHEELHOUSE.mkdir(parents=True)
        tools = ["--only-binary", ":all:", "--dest", str(WHEELHOUSE), *EXAMPLE_TOOLS]
        run(sys.executable, "-m", "pip", "download", "--quiet", *tools)
        stamp.write_text(want)
    return WHEELHOUSE


def check_offline_install(wheel: Path) -> None:
    step("the wheel in a fresh venv, installed with no network (--no-index)")
    wheelhouse = ensure_wheelhouse()
    with tempfile.TemporaryDirectory(prefix="koma-sdk-wheel-") as d:
        fresh = Path(d) / "venv"
        venv.EnvBuilder(with_pip=True).create(fresh)
        py = venv_python(fresh)
        env = {k: v for k, v in os.environ.items() if k not in ("PIP_FIND_LINKS", "KOMA_SIM_PATH", "PYTHONPATH")}
        env = {k: v for k, v in env.items() if not k.startswith("PYTEST_")}
        run(str(py), "-m", "pip", "install", "--quiet", "--no-index", str(wheel), env=env)
        run(str(py), "-c", OFFLINE_TURN, cwd=d, env=env)
        # The documented testing example, unchanged, against the installed
        # package: its app, its tests under asyncio and trio, the fake_koma
        # fixture from the package's entry point, and koma-sim from the wheel.
        tools = ["--no-index", "--find-links", str(wheelhouse), *EXAMPLE_TOOLS]
        run(str(py), "-m", "pip", "install", "--quiet", *tools, env=env)
        example = Path(d) / "example"
        example.mkdir()
        for name in ("app.py", "test_app.py"):
            shutil.copyfile(EXAMPLE / name, example / name)
        r = subprocess.run(
            [str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_app.py"],
            cwd=example,
            env=env,
            capture_output=True,
            text=True,
        )
        print(r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stdout)
        # Each of its tests under asyncio and trio.
        expected = 2 * len(re.findall(r"^async def test_", (EXAMPLE / "test_app.py").read_text(), re.M))
        if r.returncode != 0 or not re.search(rf"^{expected} passed", r.stdout.strip().splitlines()[-1], re.M):
            sys.exit(f"the testing example failed against the installed wheel:\n{r.stdout}{r.stderr}")


# What a wheel built from the sdist needs: the Python side and the backend,
# and the workspace's crates that the native module and koma-sim are built from.
SDIST_REQUIRED = {
    "PKG-INFO",
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "_build/koma_build.py",
    "koma_sdk/__init__.py",
    "koma_sdk/py.typed",
    "Cargo.toml",
    "Cargo.lock",
    "python/Cargo.toml",
    "python/src/lib.rs",
    "crates/koma-transport/Cargo.toml",
    "crates/koma-transport/src/lib.rs",
    "crates/koma-sim/Cargo.toml",
    "crates/koma-sim/src/main.rs",
}


def check_sdist(py: Path) -> None:
    """The sdist: built, then a wheel from it (each in an isolated env, as
    `pip install koma_sdk-*.tar.gz` would), checked as the wheel is."""
    step("the sdist: built, a wheel built from it in isolation, checked, installed with no network")
    started = time.monotonic()
    env = dict(os.environ)
    env.setdefault("MATURIN_PEP517_ARGS", maturin_args())
    # The clone's cargo cache: the crates.io dependencies build the same from
    # any directory, so they are reused, while the workspace's own crates
    # compile again from the sdist's sources (see the mtimes below). The
    # clone's next build takes those as up to date: they are its sources.
    env.setdefault("CARGO_TARGET_DIR", str(ROOT / "target"))
    with tempfile.TemporaryDirectory(prefix="koma-sdk-sdist-") as d:
        out = Path(d)
        run(str(py), "-m", "build", "--sdist", "--outdir", str(out / "sdist"), str(HERE), env=env)
        sdists = list((out / "sdist").glob("koma_sdk-*.tar.gz"))
        if len(sdists) != 1:
            sys.exit(f"expected one sdist, found {sdists}")
        sdist = sdists[0]
        with tarfile.open(sdist) as tar:
            top = tar.getnames()[0].split("/", 1)[0]
            if hasattr(tarfile, "data_filter"):  # refuses links and paths out of the folder (3.10.12 on)
                tar.extractall(out / "src", filter="data")
            else:
                tar.extractall(out / "src")
        src = out / "src" / top
        rel = {str(f.relative_to(src)) for f in src.rglob("*") if f.is_file()}
        binaries = [n for n in sorted(rel) if binary_kind((src / n).read_bytes())]
        problems = [f"{n}: missing from the sdist" for n in sorted(SDIST_REQUIRED - rel)]
        problems += [f"{n}: a binary in the sdist" for n in binaries]
        if problems:
            sys.exit("sdist check failed:\n  " + "\n  ".join(problems))
        print(f"  {sdist.name}: {len(rel)} files, {sdist.stat().st_size:,} bytes")
        # The sdist's files carry one fixed old time, older than anything in
        # the cache: cargo would take the clone's build of the workspace's
        # crates as up to date. Touched, those crates compile from the sdist.
        now = time.time()
        for f in src.rglob("*"):
            os.utime(f, (now, now))
        run(str(py), "-m", "build", "--wheel", "--outdir", str(out / "wheel"), str(src), env=env)
        wheels = list((out / "wheel").glob("koma_sdk-*.whl"))
        if len(wheels) != 1:
            sys.exit(f"expected one wheel built from the sdist, found {wheels}")
        check_contents(wheels[0])
        check_offline_install(wheels[0])
    print(f"  the sdist check took {time.monotonic() - started:.0f} s")


def find_python(version: str) -> Path | None:
    """An interpreter of `version` (3.10, 3.13): pyenv's, else one on PATH."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for d in sorted(pyenv.glob(f"{version}.*"), reverse=True):
        if (d / "bin" / "python3").exists():
            return d / "bin" / "python3"
    found = shutil.which(f"python{version}")
    return Path(found) if found else None


def other_pythons(wheel: Path) -> None:
    """OTHER_TESTS under each of OTHER_PYTHONS (see OTHER_PYTHONS)."""
    for version in OTHER_PYTHONS:
        step(f"{', '.join(OTHER_TESTS)} under Python {version}")
        started = time.monotonic()
        base = find_python(version)
        if base is None:
            sys.exit(
                f"Python {version} was not found (pyenv's ~/.pyenv/versions/{version}.*, or python{version} on PATH)"
            )
        where = HERE / f".venv-{version}"
        py = venv_python(where)
        stamp = where / ".koma-pins"
        if not py.exists():
            run(str(base), "-m", "venv", str(where))
        if not stamp.exists() or stamp.read_text() != "\n".join(OTHER_PINS):
            run(str(py), "-m", "pip", "install", "--quiet", *OTHER_PINS)
            stamp.write_text("\n".join(OTHER_PINS))
        run(str(py), "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", str(wheel))
        env = {k: v for k, v in os.environ.items() if k != "KOMA_SIM_PATH"}
        tests = [str(HERE / "tests" / t) for t in OTHER_TESTS]
        run(str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests, cwd=ROOT, env=env)
        print(f"  Python {version}: {time.monotonic() - started:.0f} s")


def sdist_only() -> None:
    check_sdist(ensure_venv())


def generator(*args: str) -> None:
    """scripts/generate.mjs, which makes koma_sdk's types (and the rest) from
    schema/: it needs Node.js (20.4 or later) and the repository's npm
    packages, installed by `npm ci` when they are missing."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        sys.exit("Node.js 20.4 or later (node and npm) is needed to make the files of schema/ (scripts/generate.mjs)")
    if not (ROOT / "node_modules" / "ajv").exists():
        step("npm ci (the generator's packages: a JSON Schema validator and ruff's formatter)")
        run(npm, "ci", "--no-audit", "--no-fund", cwd=ROOT)
    run(node, str(ROOT / "scripts" / "generate.mjs"), *args, cwd=ROOT)


def generate() -> None:
    generator()


def lint_checks(py: Path) -> None:
    """The checks that need no build: schema/ and the files generated from
    it, ruff (lint and format), and `mypy --strict` on the package, which
    reads the native module's stub (`_native.pyi`)."""
    step("schema/ is valid, and the files generated from it are up to date (`npm run generate` writes them)")
    generator("--check")
    step("ruff: lint and format (python/; `ruff check --fix` and `ruff format` in python/ fix them)")
    ruff = str(py.parent / "ruff")
    run(ruff, "check", ".", cwd=HERE)
    run(ruff, "format", "--check", ".", cwd=HERE)
    step("mypy --strict: the package (its native module through the stub _native.pyi)")
    run(str(py), "-m", "mypy", "--strict", "--cache-dir", str(VENV / ".mypy_cache"), "koma_sdk", cwd=HERE)


def lint() -> None:
    started = time.monotonic()
    lint_checks(ensure_venv())
    print(f"\npython lint: passed ({time.monotonic() - started:.1f} s)")


def test() -> None:
    py = ensure_venv()
    wheel = build(py)
    env = {k: v for k, v in os.environ.items() if k != "KOMA_SIM_PATH"}
    lint_checks(py)
    step("pytest python/tests (asyncio and trio)")
    run(str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HERE / "tests"), cwd=ROOT, env=env)
    other_pythons(wheel)
    step("mypy --strict: the typing usage files and the example")
    usage = [
        p
        for p in (
            HERE / "tests" / "typing_usage.py",
            HERE / "tests" / "testing_usage.py",
            HERE / "tests" / "smoke" / "typing_smoke.py",
        )
        if p.exists()
    ]
    if not usage:
        sys.exit("no typing usage file to check (python/tests/typing_usage.py)")
    cache = str(VENV / ".mypy_cache")
    run(str(py), "-m", "mypy", "--strict", "--cache-dir", cache, *map(str, usage), cwd=ROOT)
    run(str(py), "-m", "mypy", "--strict", "--cache-dir", cache, "app.py", "test_app.py", cwd=EXAMPLE)
    step("stubtest: the native module's stub against the module (as installed)")
    with tempfile.TemporaryDirectory(prefix="koma-sdk-stubtest-") as d:  # not python/, whose koma_sdk has no module
        run(str(py), "-m", "mypy.stubtest", "koma_sdk._native", cwd=d)
    check_contents(wheel)
    check_offline_install(wheel)
    check_sdist(py)
    step("benchmark smoke run (every workload briefly, no speed asserted)")
    run(str(py), str(HERE / "bench" / "run.py"), "--smoke", cwd=HERE, env=env)
    run(str(py), str(HERE / "bench" / "per_event.py"), "--smoke", cwd=HERE, env=env)
    run(str(py), str(HERE / "bench" / "turns.py"), "--smoke", cwd=HERE, env=env)
    print("\npython: tests, typings, the wheel check, the sdist check and the benchmark smoke runs passed")


def check_wheel(args: list[str]) -> None:
    """`check-wheel WHEEL [--contents-only | --install-only] [--glibc-floor X.Y]`: the release workflow's check of a built wheel."""
    usage = "usage: python3 python/dev.py check-wheel WHEEL [--contents-only | --install-only] [--glibc-floor X.Y]"
    floor = None
    if "--glibc-floor" in args:
        i = args.index("--glibc-floor")
        m = re.fullmatch(r"(\d+)\.(\d+)", args[i + 1] if i + 1 < len(args) else "")
        if not m:
            sys.exit(usage)
        floor = (int(m.group(1)), int(m.group(2)))
        args = args[:i] + args[i + 2 :]
    wheels = [Path(a) for a in args if not a.startswith("--")]
    if len(wheels) != 1:
        sys.exit(usage)
    if "--install-only" not in args:
        check_contents(wheels[0], floor)
    if "--contents-only" not in args:
        check_offline_install(wheels[0])


def demo() -> None:
    py = ensure_venv()
    build(py)
    step("python/examples/demo.py against koma-sim")
    env = {k: v for k, v in os.environ.items() if k != "KOMA_SIM_PATH"}
    run(str(py), str(HERE / "examples" / "demo.py"), cwd=ROOT, env=env)


def ensure_fleet_venv() -> Path:
    py = venv_python(FLEET_VENV)
    stamp = FLEET_VENV / ".koma-pins"
    if not py.exists():
        step(f"venv {FLEET_VENV}")
        venv.EnvBuilder(with_pip=True).create(FLEET_VENV)
    if not stamp.exists() or stamp.read_text() != "\n".join(FLEET_PINS):
        step("the fleet tests' tools: " + ", ".join(FLEET_PINS))
        run(str(py), "-m", "pip", "install", "--quiet", *FLEET_PINS)
        stamp.write_text("\n".join(FLEET_PINS))
    return py


def fleet(args: list[str]) -> None:
    """`fleet [--bench]`: the Ray example's tests (python/tests_fleet) on a
    local Ray cluster each test starts and shuts down; `--bench` then
    measures its throughput (python/bench/ray_fleet.py)."""
    if any(a != "--bench" for a in args):
        sys.exit("usage: python3 python/dev.py fleet [--bench]")
    started = time.monotonic()
    wheel = build(ensure_venv())
    py = ensure_fleet_venv()
    step(f"install {wheel.name} into {FLEET_VENV}")
    run(str(py), "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", str(wheel))
    # No token written into the home folder, no usage report: a cluster of the tests' own.
    env = {k: v for k, v in os.environ.items() if k not in ("KOMA_SIM_PATH", "RAY_ADDRESS")}
    env.update({"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"})
    step("pytest python/tests_fleet (Ray)")
    run(str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HERE / "tests_fleet"), cwd=ROOT, env=env)
    if "--bench" in args:
        step("the Ray example's throughput (python/bench/ray_fleet.py)")
        run(str(py), str(HERE / "bench" / "ray_fleet.py"), cwd=ROOT, env=env)
    print(f"\nfleet: passed in {time.monotonic() - started:.0f} s")


def soak(args: list[str]) -> None:
    """`soak [--short] [--loop trio]`: the endurance runs of python/bench/soak.py,
    the twin of `npm run soak` (same sizes and bounds), against the wheel
    built from this checkout."""
    if any(a not in ("--short", "--loop", "asyncio", "trio") for a in args):
        sys.exit("usage: python3 python/dev.py soak [--short] [--loop asyncio|trio]")
    py = ensure_venv()
    build(py)
    step("python/bench/soak.py" + (" " + " ".join(args) if args else ""))
    env = {k: v for k, v in os.environ.items() if k != "KOMA_SIM_PATH"}
    started = time.monotonic()
    run(str(py), str(HERE / "bench" / "soak.py"), *args, cwd=ROOT, env=env)
    print(f"\nsoak: passed in {time.monotonic() - started:.0f} s")


def main() -> None:
    if len(sys.argv) >= 2 and sys.argv[1] == "soak":
        soak(sys.argv[2:])
        return
    if len(sys.argv) >= 2 and sys.argv[1] == "check-wheel":
        check_wheel(sys.argv[2:])
        return
    if len(sys.argv) >= 2 and sys.argv[1] == "fleet":
        fleet(sys.argv[2:])
        return
    commands = {"lint": lint, "test": test, "demo": demo, "check-sdist": sdist_only, "generate": generate}
    if len(sys.argv) != 2 or sys.argv[1] not in commands:
        sys.exit(
            "usage: python3 python/dev.py lint|test|demo|check-sdist|generate|fleet|soak (or check-wheel WHEEL, for the release workflow)"
        )
    commands[sys.argv[1]]()


if __name__ == "__main__":
    main()
