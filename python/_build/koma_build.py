"""The package's PEP 517 backend: maturin's, after one step of its own.

maturin builds the PyO3 crate only; koma-sim (a binary crate of the same
workspace) travels inside the package too, as `koma_sdk/bin/koma-sim`. So
before maturin builds a wheel, this builds koma-sim with cargo for the same
target and copies it there (`tool.maturin.include` puts it in the wheel).
The target is maturin's `--target` when one is given, else this machine's;
cargo's cache is the workspace's `target/` either way.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import maturin

HERE = Path(__file__).resolve().parent.parent
ROOT = HERE.parent
EXE = "koma-sim"


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
    """Build koma-sim (release) and copy it into the package; its path there."""
    if not (ROOT / "crates" / "koma-sim" / "Cargo.toml").is_file():
        raise RuntimeError(
            f"koma_sdk is built from a clone of the repository: {ROOT / 'crates' / 'koma-sim'} is missing"
        )
    triple = target or _host()
    cmd = ["cargo", "build", "--release", "--locked", "-p", "koma-sim", "--target", triple]
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


build_wheel = _after_sim(maturin.build_wheel)
build_editable = _after_sim(maturin.build_editable)
get_requires_for_build_wheel = maturin.get_requires_for_build_wheel
get_requires_for_build_editable = maturin.get_requires_for_build_wheel
prepare_metadata_for_build_wheel = maturin.prepare_metadata_for_build_wheel
prepare_metadata_for_build_editable = maturin.prepare_metadata_for_build_wheel
build_sdist = maturin.build_sdist
get_requires_for_build_sdist = maturin.get_requires_for_build_sdist
