"""The processes this test started, and theirs: read from /proc, never
machine-wide (other programs run koma-sim at the same time).

The test process becomes a child subreaper, so that a process whose parent
dies (a koma-sim whose worker was killed) is handed to the test, not to
init, and stays in the tree until it is gone."""

from __future__ import annotations

import ctypes
import os
import select
import time
from collections.abc import Iterable
from dataclasses import dataclass

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    state: str
    comm: str
    cmdline: str


def _read(pid: int) -> Proc | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
    return Proc(pid, int(ppid), state, comm, cmdline)


def descendants(root: int | None = None) -> list[Proc]:
    """Every process under `root` (this process by default), zombies included."""
    root = os.getpid() if root is None else root
    procs = [p for p in (_read(int(d)) for d in os.listdir("/proc") if d.isdigit()) if p is not None]
    children: dict[int, list[Proc]] = {}
    for p in procs:
        children.setdefault(p.ppid, []).append(p)
    out: list[Proc] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child.pid)
    return out


def reap_orphans() -> None:
    """Reaps the zombies handed to this process as subreaper (never a child
    this process started itself: those are their starters' to reap)."""
    for p in descendants():
        if p.ppid == os.getpid() and p.state == "Z" and p.comm == "koma-sim":
            try:
                os.waitpid(p.pid, os.WNOHANG)
            except ChildProcessError:
                pass


def komas() -> list[Proc]:
    """The koma-sims in this test's tree that are not gone yet (a zombie
    handed to this process is reaped first)."""
    reap_orphans()
    return [p for p in descendants() if p.comm == "koma-sim" and p.state != "Z"]


def gone(pids: Iterable[int], within: float = 30.0) -> list[int]:
    """Waits up to `within` seconds for each process to exit (a killed
    worker's koma-sim dies of its parent-death signal, which the kernel
    delivers on its own time), watching a pidfd of each; the pids still
    running then. Those handed to this process are reaped."""
    fds = {}
    for pid in set(pids):
        try:
            fds[pid] = os.pidfd_open(pid)
        except ProcessLookupError:
            pass  # gone already
    try:
        deadline = time.monotonic() + within
        left = dict(fds)
        while left:
            ready = select.select(list(left.values()), [], [], max(0.0, deadline - time.monotonic()))[0]
            if not ready:
                break
            left = {pid: fd for pid, fd in left.items() if fd not in ready}
        reap_orphans()
        return sorted(left)
    finally:
        for fd in fds.values():
            os.close(fd)
