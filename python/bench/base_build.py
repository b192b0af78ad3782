"""The "base" of a base-against-new benchmark (turns.py): koma_sdk as built
from another git commit, imported beside this checkout's as `koma_sdk_base`.

The commit's files are exported (`git archive`: no checkout, no worktree to
clean up) into target/bench-base/<commit>/, the same export that
bench/base-build.mjs makes for the Node addon. Its wheel is built there as
python/dev.py builds one, through the package's own backend (maturin, after
koma-sim), into the cargo target dir every base shares
(target/bench-base/target: the dependencies are built once). The wheel's
`koma_sdk/` is unpacked as target/bench-base/<commit>/py/koma_sdk_base/: the
package imports itself by relative imports only, and its native module's
init function is named after `_native` alone, so the copy imports under the
new name beside the real one. A finished build is reused (its stamp file).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from common import ROOT

BASE_DIR = ROOT / "target" / "bench-base"
PACKAGE = "koma_sdk_base"


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True).stdout.strip()


def resolve_base(spec: str | None) -> str:
    """The full hash of the commit `spec` names (default: the merge-base of HEAD with main)."""
    return _git("rev-parse", "--verify", f"{spec}^{{commit}}") if spec else _git("merge-base", "HEAD", "main")


def describe_new() -> str:
    """This checkout: its commit, and whether the sources differ from it."""
    try:
        sha = _git("rev-parse", "--short", "HEAD")
        dirty = _git(
            "status", "--porcelain", "--untracked-files=no", "--", "src", "crates", "Cargo.toml", "Cargo.lock", "python"
        )
    except (OSError, subprocess.CalledProcessError):
        return "not a checkout"
    return sha + (" + uncommitted changes" if dirty else "")


def export_commit(sha: str) -> Path:
    """The commit's files in target/bench-base/<sha>/ (exported once)."""
    d = BASE_DIR / sha
    if (d / ".exported").exists():
        return d
    tmp = d.with_name(f"{sha}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    subprocess.run(
        ["sh", "-c", 'git -C "$0" archive --format=tar "$1" | tar -x -C "$2"', str(ROOT), sha, str(tmp)], check=True
    )
    (tmp / ".exported").write_text(sha + "\n")
    shutil.rmtree(d, ignore_errors=True)
    tmp.rename(d)
    return d


def _host() -> str:
    out = subprocess.run(["rustc", "-vV"], check=True, capture_output=True, text=True).stdout
    return next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("host: "))


def build_base_package(sha: str) -> Path:
    """The directory to put on sys.path for `import koma_sdk_base`, the wheel
    built first if it is not there yet (minutes, the first time). Needs the
    venv's Python (maturin), as dev.py makes it."""
    d = export_commit(sha)
    py = d / "py"
    stamp = d / ".python-built"
    if stamp.exists():
        return py
    if importlib.util.find_spec("maturin") is None:  # the backend's; checked here to say what is missing
        sys.exit(
            "building the base wheel needs maturin: run this with python/.venv/bin/python (python3 python/dev.py test makes it)"
        )
    target_dir = BASE_DIR / "target"
    dist = d / "py-dist"
    shutil.rmtree(dist, ignore_errors=True)
    dist.mkdir()
    print(f"building the base wheel of {sha[:7]} in {d} (cargo target dir {target_dir})", flush=True)
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # the venv's maturin
    env["CARGO_TARGET_DIR"] = str(target_dir)
    env["MATURIN_PEP517_ARGS"] = f"--target {_host()}"
    env["PYTHONPATH"] = str(d / "python" / "_build")
    code = "import sys, koma_build; print(koma_build.build_wheel(sys.argv[1]))"
    subprocess.run([sys.executable, "-c", code, str(dist)], cwd=d / "python", env=env, check=True)
    wheels = sorted(dist.glob("koma_sdk-*.whl"))
    if len(wheels) != 1:
        sys.exit(f"expected one wheel in {dist}, found {wheels}")
    shutil.rmtree(py, ignore_errors=True)
    out = py / PACKAGE
    with zipfile.ZipFile(wheels[0]) as z:
        for info in z.infolist():
            if not info.filename.startswith("koma_sdk/") or info.is_dir():
                continue
            dest = out / info.filename[len("koma_sdk/") :]
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(z.read(info))
            dest.chmod((info.external_attr >> 16) & 0o777 or 0o644)
    stamp.write_text(wheels[0].name + "\n")
    return py
