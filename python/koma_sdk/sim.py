"""Where koma-sim is: a deterministic stand-in for `koma` that speaks the
same protocol, shipped inside the package for your own tests.

    from koma_sdk import Client
    from koma_sdk.sim import path
    async with Client(path(), env={"KOMA_SIM_DELAY_MS": "0"}) as client: ...

`path()` is looked up each time it is called, in this order:
  1. `KOMA_SIM_PATH`, when set: that file (a koma-sim built by hand);
  2. `koma_sdk/bin/koma-sim` inside the installed package (every wheel
     carries the one of its platform).
When neither is there it raises `FileNotFoundError`, saying how to get one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["path"]

_EXE = "koma-sim.exe" if sys.platform == "win32" else "koma-sim"
_HINT = (
    "Build it from the @koma/sdk repository (`cargo build --release -p koma-sim`) and set "
    "KOMA_SIM_PATH to the binary, or install koma_sdk from a wheel or with `pip install ./python`."
)


def path() -> str:
    """The path of koma-sim, to pass as a `Client`'s executable."""
    override = os.environ.get("KOMA_SIM_PATH")
    if override:
        p = Path(override).resolve()
        if not p.is_file():
            raise FileNotFoundError(f"koma-sim: KOMA_SIM_PATH is {override!r}, and there is no such file. {_HINT}")
        return _executable(p, "KOMA_SIM_PATH")
    p = Path(__file__).resolve().parent / "bin" / _EXE
    if p.is_file():
        return _executable(p, "inside koma_sdk")
    raise FileNotFoundError(f"koma-sim: this installation of koma_sdk has none (looked for {p}). {_HINT}")


def _executable(p: Path, where: str) -> str:
    if not os.access(p, os.X_OK):
        raise FileNotFoundError(f"koma-sim: {p} ({where}) is there but cannot be executed (chmod +x it). {_HINT}")
    return str(p)
