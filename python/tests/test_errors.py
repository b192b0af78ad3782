"""A class per error code: `except koma_sdk.TransportFailure:` catches what
the package raises, a program's tests raise the same classes, each shows as
`koma_sdk.<Name>` in a traceback, and pickles whole."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

import koma_sdk
from helpers import SIM, sim_env
from koma_sdk import Client, KomaError, RemoteError
from koma_sdk.testing import ScenarioError, check_scenario

ROOT = Path(__file__).resolve().parents[2]
#: Each code's class, as schema/protocol.schema.json lists them.
CLASSES = {
    c["const"]: (c["x-class"], c.get("x-python-also"))
    for c in json.loads((ROOT / "schema" / "protocol.schema.json").read_text())["$defs"]["ErrorCode"]["oneOf"]
}


def test_every_code_has_its_class_exported_named_by_the_package_and_made_by_code_or_by_class() -> None:
    assert sorted(CLASSES) == sorted(koma_sdk.ErrorCode.__args__)  # type: ignore[attr-defined]
    for code, (name, also) in CLASSES.items():
        cls = getattr(koma_sdk, name)
        assert name in koma_sdk.__all__
        assert issubclass(cls, KomaError) and cls.__module__ == "koma_sdk", cls
        for e in (KomaError(code, "made by a test"), cls("made by a test")):
            assert type(e) is cls
            assert (e.code, e.message, e.remote, e.result) == (code, "made by a test", None, None)
            assert str(e) == f"{code}: made by a test"
            assert repr(e) == f"{name}(code={code!r}, message='made by a test')"
            assert [c for c, (n, _) in CLASSES.items() if isinstance(e, getattr(koma_sdk, n))] == [code]
            assert isinstance(e, TimeoutError) == (also == "TimeoutError")
            shown = traceback.format_exception_only(type(e), e)[-1]
            assert shown == f"koma_sdk.{name}: {code}: made by a test\n", shown
    with pytest.raises(ValueError, match="'bogus' is not an error code"):
        KomaError("bogus", "x")  # type: ignore[arg-type]


def test_an_error_pickles_whole_class_code_message_remote_and_result() -> None:
    remote = RemoteError("busy", "a turn is running", {"turn": "t-1"})
    e = koma_sdk.RemoteFailure("koma said busy", remote)
    e.result = koma_sdk.TurnResult(None, "unknown", "", [koma_sdk.ToolCall("c-1", "run", {"x": 1})], 0, False)
    again = pickle.loads(pickle.dumps(e))
    assert type(again) is koma_sdk.RemoteFailure
    assert (again.code, again.message, str(again)) == (e.code, e.message, str(e))
    assert (again.remote.code, again.remote.message, again.remote.data) == (
        "busy",
        "a turn is running",
        {"turn": "t-1"},
    )
    assert again.result == e.result
    timed_out = pickle.loads(pickle.dumps(KomaError("timeout", "x")))
    assert type(timed_out) is koma_sdk.TimedOut and isinstance(timed_out, TimeoutError)


async def test_except_a_class_catches_what_the_package_raises(home: Path, anyio_backend: str) -> None:
    async with Client(SIM, env=sim_env(home)) as c:
        await c.create()
        try:
            await c.approve("a-999", "allow")
        except koma_sdk.RemoteFailure as e:
            assert e.remote.code == "unknown_approval"  # typed: a RemoteFailure has its remote
        else:
            raise AssertionError("no RemoteFailure")
        with pytest.raises(koma_sdk.InvalidParams):
            await c.submit(1)  # type: ignore[arg-type]
    with pytest.raises(koma_sdk.ClientClosed) as closed:
        await c.state()
    assert closed.value.code == "closed"
    failed = Client(str(home / "no-such-koma"))
    with pytest.raises(koma_sdk.SpawnFailed):
        await failed.probe()
    died = Client(SIM, env=sim_env(home, faults="exit_mid_request"))
    await died.probe()
    with pytest.raises(koma_sdk.DeliveryUnknown):
        await died.state()
    with pytest.raises(koma_sdk.TransportFailure):
        await died.state()
    await died.close()


def test_a_scenario_error_is_named_by_the_module_it_is_imported_from() -> None:
    with pytest.raises(ScenarioError) as info:
        check_scenario({"turns": [{"steps": [{"do": "sing"}]}]})
    assert ScenarioError.__module__ == "koma_sdk.testing"
    assert traceback.format_exception_only(type(info.value), info.value)[-1].startswith(
        "koma_sdk.testing.ScenarioError: "
    )


def test_a_scenario_mistake_under_pytest_shows_the_test_not_the_plugin(tmp_path: Path) -> None:
    (tmp_path / "test_mistake.py").write_text(
        'def test_it(fake_koma):\n    fake_koma({"turns": [{"steps": [{"do": "sing"}]}]})\n'
    )
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--tb=long", "test_mistake.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    out = r.stdout
    assert r.returncode == 1, out + r.stderr
    assert "ScenarioError" in out and "test_mistake.py" in out, out
    for internal in ("pytest_plugin.py", "_scenario.py"):
        assert internal not in out, f"{internal} shows in:\n{out}"


def test_the_options_of_sdk_schema_are_the_keyword_arguments_of_their_functions() -> None:
    """Options are keyword arguments in Python: each of `sdk.schema.json`'s
    options that Python has is one of its function's, and its function has
    no other option."""
    import inspect
    import re

    defs = json.loads((ROOT / "schema" / "sdk.schema.json").read_text())["$defs"]
    checked = 0
    for name, schema in defs.items():
        function = schema.get("x-python-function")
        if function is None:
            continue
        target: object = koma_sdk
        for part in function.split("."):
            target = getattr(target, part)
        params = inspect.signature(target.__init__ if isinstance(target, type) else target).parameters  # type: ignore[misc]
        options = {
            re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), key)
            for key, prop in schema["properties"].items()
            if "python" in prop.get("x-langs", ["node", "python"])
        }
        keywords = {n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
        assert keywords <= options, f"{function}: keywords {sorted(keywords - options)} are not in {name}"
        assert options <= set(params), f"{function}: {name}'s {sorted(options - set(params))} are not its arguments"
        checked += 1
    assert checked == 4
