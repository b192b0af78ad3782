"""The trace on the package's loggers (`koma_sdk`, `koma_sdk.stderr`,
`koma_sdk.trace`; the README's "Logging"), through a real koma-sim child:
frames at DEBUG naming the client, koma's stderr lines at INFO, the notes of
a client's life, and nothing on fd 2 unless the application configures
logging so."""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

import pytest

from helpers import LOOPS, RUN_MAIN, MakeClient, kill_hard, raises, run_python, sim_env

pytestmark = pytest.mark.anyio


def on(caplog: pytest.LogCaptureFixture, name: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == name]


async def test_a_round_trip_logs_the_frames_written_and_read_naming_the_client(
    sim_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="koma_sdk")
    c = sim_client()  # koma_sdk.trace is enabled for DEBUG now: its frames are logged
    await c.create()
    await c.state()
    pid = c.pid
    assert pid is not None
    frames = on(caplog, "koma_sdk.trace")
    assert frames and all(r.levelno == logging.DEBUG for r in frames)
    assert all(r.koma_pid == pid and r.koma_kind == "frame" for r in frames), frames  # type: ignore[attr-defined]
    lines = [r.getMessage() for r in frames]
    prefix = re.escape(f"[koma_sdk pid {pid}]")
    written = [
        i for i, m in enumerate(lines) if re.match(prefix + r' -> \{"id":"(\d+)","method":"state","params":\{\}\}$', m)
    ]
    assert len(written) == 1, lines
    state_id = re.search(r'"id":"(\d+)"', lines[written[0]])
    assert state_id is not None
    answered = [
        i for i, m in enumerate(lines) if m.startswith(f'[koma_sdk pid {pid}] <- {{"id":"{state_id[1]}","result"')
    ]
    assert len(answered) == 1 and answered[0] > written[0], lines
    assert frames[written[0]].koma_direction == "written"  # type: ignore[attr-defined]
    assert frames[answered[0]].koma_direction == "read"  # type: ignore[attr-defined]
    assert re.match(prefix + r' <- \{"type":"hello"', lines[0]), "the first frame is hello"


async def test_without_trace_or_debug_no_frame_is_logged_and_debug_turned_on_later_logs_the_next_ones(
    sim_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="koma_sdk")
    c = sim_client()
    await c.create()
    assert on(caplog, "koma_sdk.trace") == [], "nothing kept while nobody logs frames"
    caplog.set_level(logging.DEBUG, logger="koma_sdk")  # as a handler added later: from the next call on
    await c.state()
    await c.close()
    frames = [r.getMessage() for r in on(caplog, "koma_sdk.trace")]
    assert not any('"method":"create"' in f for f in frames), frames
    assert any('"method":"state"' in f for f in frames), frames
    assert on(caplog, "koma_sdk"), "the notes are logged whenever the logger takes them"


async def test_trace_true_logs_the_frames_whatever_the_level_at_creation(
    sim_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    c = sim_client(trace=True)
    caplog.set_level(logging.DEBUG, logger="koma_sdk")
    await c.state()
    assert any('"method":"state"' in r.getMessage() for r in on(caplog, "koma_sdk.trace"))


async def test_komas_stderr_lines_are_logged_at_info_under_the_package(
    sim_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="koma_sdk")
    c = sim_client()
    created = await c.create()
    pid = c.pid
    await c.close()  # every line koma wrote has been read and logged when close returns
    lines = on(caplog, "koma_sdk.stderr")
    assert all(r.levelno == logging.INFO and r.koma_kind == "stderr" for r in lines)  # type: ignore[attr-defined]
    said = [r.getMessage() for r in lines]
    assert f"[koma_sdk pid {pid}] stderr koma-sim: session {created.session} created" in said, said
    assert f"[koma_sdk pid {pid}] stderr koma-sim: detach" in said, said


async def test_the_notes_of_a_clients_life_are_logged_in_order(
    sim_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="koma_sdk")
    c = sim_client()
    await c.create()
    pid = c.pid
    await c.close()
    notes = [(r.levelno, r.getMessage()) for r in on(caplog, "koma_sdk")]
    who = f"[koma_sdk pid {pid}]"
    assert notes == [
        (logging.DEBUG, f"{who} koma started, pid {pid}"),
        (logging.DEBUG, f"{who} hello checked, koma 0.1.0"),
        (logging.DEBUG, f"{who} detach written by close()"),
        (logging.DEBUG, f"{who} koma exited with code 0"),
        (logging.DEBUG, f"{who} closed"),
    ]


async def test_a_failure_is_logged_as_a_warning(sim_client: MakeClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="koma_sdk")
    # `hold` keeps koma-sim from answering; koma-sim.exe refuses it (no SIGUSR1 to release it by).
    c = sim_client(faults="never_answer" if sys.platform == "win32" else "hold")
    await c.probe()
    pid = c.pid
    assert pid is not None
    kill_hard(pid)
    error = await raises(c.state())
    await c.close()
    warnings = [r.getMessage() for r in on(caplog, "koma_sdk")]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(f"[koma_sdk pid {pid}] failed: transport_failure: "), warnings
    assert error.code in ("transport_failure", "delivery_unknown")
    assert "\n" not in warnings[0], "one line: koma wrote nothing on its stderr"


async def test_a_failures_warning_shows_komas_last_lines_of_stderr_as_lines(
    sim_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="koma_sdk")
    c = sim_client(faults="exit_mid_request")
    await raises(c.state())
    await c.close()
    (warning,) = [r.getMessage() for r in on(caplog, "koma_sdk")]
    first, *tail = warning.split("\n")
    assert first.endswith("; last lines of stderr:"), warning
    assert "    koma-sim: exiting on purpose (exit_mid_request)" in tail, warning
    assert "\\n" not in warning, "no literal \\n"


@pytest.mark.parametrize("loop", LOOPS)
def test_nothing_reaches_fd_2_unless_logging_is_configured_so(home: Path, loop: str) -> None:
    body = f"""
LOGGING
async def main():
    c = Client(SIM, env={sim_env(home)!r}, trace=True)
    await c.create()
    await c.state()
    from helpers import kill_hard
    kill_hard(c.pid)  # a failure: a WARNING of koma_sdk
    try:
        await c.state()
    except KomaError:
        pass
    await c.close()
    print("done")
{RUN_MAIN[loop]}
"""
    quiet = run_python(body.replace("LOGGING", ""), env={"KOMA_SDK_TRACE": "1"})
    assert (quiet.returncode, quiet.stdout) == (0, "done\n"), quiet.stderr
    assert quiet.stderr == "", "nothing is printed: logging is not configured"
    configured = run_python(body.replace("LOGGING", "import logging\nlogging.basicConfig(level=logging.DEBUG)"))
    assert configured.returncode == 0, configured.stderr
    err = configured.stderr
    assert re.search(
        r'DEBUG:koma_sdk\.trace:\[koma_sdk pid \d+\] -> \{"id":"\d+","method":"create","params":\{\}\}', err
    ), err
    assert re.search(r'DEBUG:koma_sdk\.trace:\[koma_sdk pid \d+\] <- \{"type":"hello"', err), err
    assert re.search(r"INFO:koma_sdk\.stderr:\[koma_sdk pid \d+\] stderr koma-sim: session s-", err), err
    assert re.search(r"WARNING:koma_sdk:\[koma_sdk pid \d+\] failed: ", err), err
    assert re.search(r"DEBUG:koma_sdk:\[koma_sdk pid \d+\] closed", err), err


def test_a_trace_handler_added_after_the_client_was_made_gets_its_frames(home: Path) -> None:
    # Made while koma_sdk.trace logs INFO, a client keeps no frame; once the
    # logger is enabled for DEBUG (a handler added later, as a late
    # subscriber of Node's koma-sdk:trace), its frames come from its next call
    # on. KOMA_SDK_TRACE=1 keeps them from the start.
    body = f"""
import asyncio, logging
async def main():
    async with Client(SIM, env={sim_env(home)!r}) as c:
        await c.create()
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
        trace = logging.getLogger("koma_sdk.trace")
        trace.addHandler(handler)
        trace.setLevel(logging.DEBUG)
        await c.state()
asyncio.run(main())
"""
    late = run_python(body, env={"KOMA_SDK_TRACE": ""})
    assert late.returncode == 0, late.stderr
    assert '"method":"create"' not in late.stderr, "nothing was kept before: " + late.stderr
    assert re.search(r'DEBUG:koma_sdk\.trace:\[koma_sdk pid \d+\] -> \{"id":"\d+","method":"state"', late.stderr), (
        late.stderr
    )
    assert re.search(r"DEBUG:koma_sdk\.trace:\[koma_sdk pid \d+\] <- \{.*\"result\"", late.stderr), late.stderr
    early = run_python(body, env={"KOMA_SDK_TRACE": "1"})
    assert early.returncode == 0, early.stderr
    assert re.search(r'DEBUG:koma_sdk\.trace:\[koma_sdk pid \d+\] -> \{"id":"\d+","method":"state"', early.stderr), (
        early.stderr
    )
