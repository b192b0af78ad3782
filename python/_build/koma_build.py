"""The package's PEP 517 backend: maturin's, with two steps of its own.

maturin builds the PyO3 crate only; koma-sim (a binary crate of the same
workspace) travels inside the package too, as `koma_sdk/bin/koma-sim`. So
before maturin builds a wheel, this builds koma-sim with cargo for the same
target, stripped as maturin strips the native module (`tool.maturin.strip`),
and copies it there (`tool.maturin.include` puts it in the wheel). The target
is maturin's `--target` when one is given, else this machine's.

maturin's sdist carries the PyO3 crate and its path dependencies only. After
it, this adds what a wheel built from the sdist needs besides: koma-sim's
crate, a member of the sdist's workspace, and a Cargo.lock with only that
workspace's packages, so that `--locked` builds hold there too. The backend
itself is in the sdist through `tool.maturin.include`.

Two layouts: in a clone this file is `python/_build/` and the workspace is
the clone; in an unpacked sdist (PKG-INFO beside pyproject.toml) it is
`_build/` and the workspace is the sdist's root.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import maturin

HERE = Path(__file__).resolve().parent.parent
ROOT = HERE if (HERE / "PKG-INFO").is_file() else HERE.parent
EXE = "koma-sim"
SIM_CRATE = "crates/koma-sim"


def _target(config_settings: Optional[Mapping[str, Any]]) -> Optional[str]:
    args = maturin.get_maturin_pep517_args(config_settings)
    for i, a in enumerate(args):
        if a == "--target" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--target="):
            return a.split("=", 1)[1]
    return os.environ.get("CARGO_BUILD_TARGET") or None


def _host() -> str:
    out = subprocess.run(["rustc", "-vV"], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("host: "):
            return line.split(": ", 1)[1].strip()
    raise RuntimeError("rustc -vV did not name the host")


def build_sim(target: Optional[str] = None) -> Path:
    """Build koma-sim (release, stripped) and copy it into the package; its path there."""
    if not (ROOT / SIM_CRATE / "Cargo.toml").is_file():
        raise RuntimeError(
            f"koma_sdk is built from a clone of the repository or from its sdist: {ROOT / SIM_CRATE} is missing"
        )
    triple = target or _host()
    # `cargo rustc` gives the flag to koma-sim alone: its dependencies keep the
    # build they share with every other build of the workspace.
    cmd = ["cargo", "rustc", "--release", "--locked", "-p", EXE, "--bin", EXE, "--target", triple]
    cmd += ["--", "-C", "strip=symbols"]
    print("koma_sdk build:", shlex.join(cmd), flush=True)
    subprocess.run(cmd, cwd=ROOT, check=True)
    target_dir = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    built = target_dir / triple / "release" / EXE
    out = HERE / "koma_sdk" / "bin" / EXE
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    shutil.copyfile(built, tmp)
    tmp.chmod(0o755)
    os.replace(tmp, out)  # a koma-sim that is running is not written over
    return out


def _after_sim(build: Callable[..., str]) -> Callable[..., str]:
    """maturin's hook `build`, run once koma-sim is in the package."""

    def hook(
        wheel_directory: str,
        config_settings: Optional[Mapping[str, Any]] = None,
        metadata_directory: Optional[str] = None,
    ) -> str:
        build_sim(_target(config_settings))
        return build(wheel_directory, config_settings, metadata_directory)

    return hook


def _sim_files() -> list[str]:
    """koma-sim's files, as `cargo package` would ship them (as maturin lists the other crates)."""
    cmd = ["cargo", "package", "--list", "--allow-dirty", "--manifest-path", str(ROOT / SIM_CRATE / "Cargo.toml")]
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout.splitlines()
    # cargo's own additions (a normalized manifest, the lock): the sdist has
    # the workspace's instead, and the manifest as written.
    generated = {".cargo_vcs_info.json", "Cargo.lock", "Cargo.toml.orig"}
    return sorted(f for f in out if f not in generated)


def _with_member(manifest: str, member: str) -> str:
    """The workspace manifest maturin wrote, with one more member."""
    match = re.search(r"^members = \[(.*)\]$", manifest, re.M)
    if not match:
        raise RuntimeError(f"no `members = [...]` line in the sdist's Cargo.toml:\n{manifest}")
    members = json.loads(f"[{match.group(1)}]")
    if member not in members:
        members.append(member)
    return manifest[: match.start()] + f"members = {json.dumps(members)}" + manifest[match.end() :]


def _pruned_lock(files: Mapping[str, bytes]) -> bytes:
    """Cargo.lock for the sdist's workspace: cargo resolves it with the clone's
    lock as the starting point, so it keeps every version and drops the
    packages of crates the sdist does not carry (the Node addon's)."""
    with tempfile.TemporaryDirectory(prefix="koma-sdk-sdist-") as d:
        for name, data in files.items():
            path = Path(d, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        cmd = ["cargo", "metadata", "--format-version", "1", "--manifest-path", str(Path(d, "Cargo.toml"))]
        subprocess.run(cmd, cwd=d, check=True, stdout=subprocess.DEVNULL)
        return Path(d, "Cargo.lock").read_bytes()


def _read(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    f = tar.extractfile(member) if member.isfile() else None
    return f.read() if f else b""


def build_sdist(sdist_directory: str, config_settings: Optional[Mapping[str, Any]] = None) -> str:
    """maturin's sdist, completed with koma-sim's crate and a lock for its workspace."""
    name = maturin.build_sdist(sdist_directory, config_settings)
    path = Path(sdist_directory, name)
    with tarfile.open(path, "r:gz") as tar:
        members = [(m, _read(tar, m)) for m in tar.getmembers()]
    top = members[0][0].name.split("/", 1)[0]
    files = {m.name[len(top) + 1 :]: data for m, data in members if m.isfile()}
    template = next(m for m, _ in members if m.isfile())

    added: dict[str, bytes] = {}
    for rel in _sim_files():
        added[f"{SIM_CRATE}/{rel}"] = (ROOT / SIM_CRATE / rel).read_bytes()
    manifest = _with_member(files["Cargo.toml"].decode(), SIM_CRATE).encode()
    lock = _pruned_lock({**files, **added, "Cargo.toml": manifest})
    replaced = {"Cargo.toml": manifest, "Cargo.lock": lock}

    def info(rel: str, data: bytes, like: tarfile.TarInfo) -> tarfile.TarInfo:
        out = tarfile.TarInfo(f"{top}/{rel}")
        out.size, out.mode, out.mtime = len(data), like.mode, like.mtime
        return out

    buf = io.BytesIO()
    # No name or time in the gzip header: the same sources give the same bytes.
    with gzip.GzipFile(fileobj=buf, mode="wb", filename="", mtime=0) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for m, data in members:
                rel = m.name[len(top) + 1 :]
                if rel in replaced:
                    m, data = info(rel, replaced[rel], m), replaced[rel]
                tar.addfile(m, io.BytesIO(data) if m.isfile() else None)
            for rel, data in sorted(added.items()):
                tar.addfile(info(rel, data, template), io.BytesIO(data))
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(buf.getvalue())
    os.replace(tmp, path)
    return name


build_wheel = _after_sim(maturin.build_wheel)
build_editable = _after_sim(maturin.build_editable)
get_requires_for_build_wheel = maturin.get_requires_for_build_wheel
get_requires_for_build_editable = maturin.get_requires_for_build_wheel
prepare_metadata_for_build_wheel = maturin.prepare_metadata_for_build_wheel
prepare_metadata_for_build_editable = maturin.prepare_metadata_for_build_wheel
get_requires_for_build_sdist = maturin.get_requires_for_build_sdist
