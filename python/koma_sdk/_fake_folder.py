"""The folder of a `koma_sdk.testing` fake (its scenario, session home,
record and progress), made in the temporary directory, and the sweep of the
folders that a process left when it was killed before it could remove them.
`@koma/sdk/testing` (lib/fake-folder.js) names and sweeps its folders the
same way, so either package removes the other's."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

# A fake's own folder is `koma-fake-<pid namespace>-<pid>-XXXXXXXX` in the
# temporary directory: its owner, so that a folder whose owner is gone (a test
# process killed without a chance to clean up) is removed by the next fake
# made on the machine, in either package. The pid namespace (Linux's; 0
# elsewhere) keeps a process from taking for gone the owner of a folder in a
# temporary directory shared with another namespace (a container).
_NAME = re.compile(r"^koma-fake-(\d+)-(\d+)-")


def _pid_namespace() -> str:
    try:
        m = re.fullmatch(r"pid:\[(\d+)\]", os.readlink("/proc/self/ns/pid"))
    except OSError:
        return "0"
    return m.group(1) if m else "0"


def _owner() -> str:
    return f"{_pid_namespace()}-{os.getpid()}"


def _running(pid: int) -> bool:
    if sys.platform == "win32":
        # os.kill cannot ask there (any signal it sends ends the process): the
        # process's exit code is STILL_ACTIVE while it runs.
        import ctypes

        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return ctypes.get_last_error() == 5  # ERROR_ACCESS_DENIED: another user's
        try:
            code = ctypes.c_ulong()
            return bool(kernel32.GetExitCodeProcess(handle, ctypes.byref(code))) and code.value == 259
        finally:
            kernel32.CloseHandle(handle)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's
    return True


def _sweep() -> None:
    """Remove the folders of fakes whose owner has exited (of this pid
    namespace on Linux)."""
    ns = _pid_namespace()
    tmp = tempfile.gettempdir()
    try:
        names = os.listdir(tmp)
    except OSError:
        return
    for name in names:
        m = _NAME.match(name)
        if m is None or m.group(1) != ns or int(m.group(2)) == os.getpid() or _running(int(m.group(2))):
            continue
        shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)


def make_folder() -> Path:
    """A new folder for a fake of this process, once the folders of gone owners are swept."""
    _sweep()
    return Path(tempfile.mkdtemp(prefix=f"koma-fake-{_owner()}-"))
