"""The turn scenarios of testdata/scenarios, one test each under asyncio and
trio: the same files `__test__/scenarios.test.mjs` runs, so that a difference
between the two packages fails a test. The step vocabulary is
testdata/scenarios/README.md; this file only says each step in Python."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from helpers import HANG, ROOT, SIM, WINDOWS_KILL_EXIT, MakeClient, kill_hard
from koma_sdk import Client, KomaError
from koma_sdk._stream import STRIDE
from koma_sdk.pytest_plugin import FakeKomaFactory
from spans import Node, Tracing

pytestmark = pytest.mark.anyio

DIR = ROOT / "testdata" / "scenarios"


def _load() -> list[Any]:
    params = []
    for path in sorted(DIR.glob("*.json")):
        scenario = json.loads(path.read_text())
        name = path.stem
        marks = []
        if scenario.get("only") not in (None, "python"):
            marks.append(pytest.mark.skip(reason=f"{scenario['only']} only: {scenario.get('why')}"))
        known = scenario.get("known", {}).get("python")
        if known:
            marks.append(pytest.mark.xfail(strict=True, reason=known))
        params.append(pytest.param(scenario, id=name, marks=marks))
    return params


SCENARIOS = _load()


def name_of(item: Any) -> str:
    """An item's name in a scenario: its event name, or "overflow"."""
    return str(item.name) if item.type == "event" else str(item.type)


def expand(names: list[str]) -> list[str]:
    """["output*3"] -> ["output", "output", "output"]"""
    out: list[str] = []
    for n in names:
        m = re.fullmatch(r"(.*)\*(\d+)", n)
        out.extend([m.group(1)] * int(m.group(2)) if m else [n])
    return out


def squeeze(names: list[str]) -> str:
    """A short list of names for a message: runs of one name as name*N."""
    runs: list[list[Any]] = []
    for n in names:
        if runs and runs[-1][0] == n:
            runs[-1][1] += 1
        else:
            runs.append([n, 1])
    return ", ".join(f"{n}*{k}" if k > 1 else n for n, k in runs)


class Hang(AssertionError):
    pass


async def within(call: Awaitable[Any], what: str) -> Any:
    """Await `call`, at most HANG seconds."""
    try:
        with anyio.fail_after(HANG):
            return await call
    except TimeoutError as e:
        if isinstance(e, KomaError):  # the package's own timeout is one too
            raise
        raise Hang(f"gave up after {HANG} s waiting for {what}") from None


class Changes:
    """Wakes whoever waits for something to change (an item taken, a handler called, a loop ended)."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = anyio.Event()

    async def until(self, cond: Callable[[], bool], what: str | Callable[[], str]) -> None:
        try:
            with anyio.fail_after(HANG):
                while not cond():
                    await self._event.wait()
        except TimeoutError as e:
            if isinstance(e, KomaError):  # the package's own timeout is one too
                raise
            raise Hang(f"gave up after {HANG} s waiting for {what if isinstance(what, str) else what()}") from None


def check_items(items: list[Any], expect: dict[str, Any], what: str) -> None:
    """`expect` of a loop (or an events() loop): the names and data of what it took."""
    names = [name_of(i) for i in items]
    seen = f"{what} took [{squeeze(names)}]"
    if "names" in expect:
        assert squeeze(names) == squeeze(expand(expect["names"])), seen
    if "starts_with" in expect:
        head = expand(expect["starts_with"])
        assert names[: len(head)] == head, seen
    if "ends_with" in expect:
        tail = expand(expect["ends_with"])
        assert names[max(0, len(names) - len(tail)) :] == tail, seen
    for n in expect.get("contains", []):
        assert n in names, f"{seen}: no {n}"
    for n in expect.get("excludes", []):
        assert n not in names, f"{seen}: a {n}"
    for name, subset in expect.get("data", {}).items():
        events = [i for i in items if name_of(i) == name]
        assert events, f"{seen}: no {name} to check the data of"
        for e in events:
            for k, v in subset.items():
                assert e.data.get(k) == v, f"{what}: {name} (seq {e.seq}) data[{k!r}]: {e.data!r}"


def check_subset(actual: Any, expect: dict[str, Any], what: str) -> None:
    """A subset of a plain result (State, submit's answer, a request's dict)."""
    for k, v in expect.items():
        got = actual.get(k) if isinstance(actual, dict) else getattr(actual, k)
        assert got == v, f"{what}.{k} in {actual!r}"


def shown(r: Any) -> str:
    calls = [{k: getattr(c, k) for k in ("call", "tool", "input", "output", "error", "approval")} for c in r.tool_calls]
    fields = {k: getattr(r, k) for k in ("turn", "status", "output", "events", "overflowed")}
    return repr({**fields, "tool_calls": calls})


def check_turn_result(actual: Any, expect: dict[str, Any], what: str) -> None:
    """A subset of a TurnResult."""
    assert actual is not None, f"{what}: no result"
    for k, v in expect.items():
        if k == "output_contains":
            assert v in actual.output, f"{what}.output has {v!r}: {shown(actual)}"
        elif k == "tool_calls":
            assert len(actual.tool_calls) == len(v), f"{what}.tool_calls: {shown(actual)}"
            for i, call in enumerate(v):
                got = actual.tool_calls[i]
                for ck, cv in call.items():
                    if ck == "output_contains":
                        assert cv in str(got.output), f"{what}.tool_calls[{i}].output: {shown(actual)}"
                    else:
                        assert getattr(got, ck) == cv, f"{what}.tool_calls[{i}].{ck}: {shown(actual)}"
        else:
            assert getattr(actual, k) == v, f"{what}.{k}: {shown(actual)}"


def check_within(step: dict[str, Any], started: float, what: str) -> None:
    """`within_ms`: the step's wait ended within that many milliseconds (a deadline's bound, with slack)."""
    if "within_ms" in step:
        took = (time.monotonic() - started) * 1000
        assert took <= step["within_ms"], f"{what} took {took:.0f} ms, more than {step['within_ms']}"


class TurnRec:
    """A Turn, or a run() started in the background, by its scenario name."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.turn: Any = None
        self.calls = 0
        self.requests: list[Any] = []
        self.kept: Any = None
        self.thrown: list[BaseException] = []
        self.seqs: list[int] = []
        self.on_call: Callable[[], None] | None = None
        self.cancel_on_approval = False
        self.cancel_before = False
        # a background run's outcome
        self.scope = anyio.CancelScope()
        self.done = anyio.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.cancelled = False
        # the cancellation that left a loop, kept alive (with its frames) for the rest of the scenario
        self.kept_exception: BaseException | None = None


class LoopRec:
    """A loop over client.events() in the background."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.ended = False
        self.error: BaseException | None = None
        self.scope = anyio.CancelScope()
        self.resume = anyio.Event()
        self.paused = False


class BodyError(Exception):
    """The loop's body failed (the scenario's own error)."""


def on_this_system(span: dict[str, Any]) -> dict[str, Any]:
    """A client span's attributes as this system says them: Windows has no
    signals, and koma-sim.exe's crash step of SIGKILL exits with code 1
    (docs/koma-sim.md, "On Windows"), which the span then carries instead."""
    signal = span.get("attributes", {}).get("koma.exit.signal")
    if sys.platform != "win32" or signal is None:
        return span
    assert signal == 9, "a scenario's crash on Windows: only SIGKILL's exit code is written here"
    attributes = {k: v for k, v in span["attributes"].items() if k != "koma.exit.signal"}
    return {**span, "attributes": {**attributes, "process.exit.code": WINDOWS_KILL_EXIT}}


def check_spans(nodes: list[Node], expected: list[dict[str, Any]], path: str) -> None:
    """`spans`: the spans under the scenario's own, in the order they started:
    each its name, a subset of its attributes, its `error` (error.type; none
    unless given) and its `children` (none unless given)."""
    assert [n.name for n in nodes] == [e["name"] for e in expected], f"{path}: the spans under it"
    for n, e in zip(nodes, expected, strict=True):
        here = f"{path} > {e['name']}"
        for k, v in e.get("attributes", {}).items():
            assert n.attributes.get(k) == v, f"{here}: {k} in {n.attributes!r}"
        assert n.error == e.get("error"), f"{here}: error.type"
        check_spans(n.children, e.get("children", []), here)


class Runner:
    def __init__(self, client: Client, tg: Any, scenario: dict[str, Any], tracing: Tracing | None = None) -> None:
        self.client = client
        self.tg = tg
        self.scenario = scenario
        self.tracing = tracing
        self.turns: dict[str, TurnRec] = {}
        self.loops: dict[str, LoopRec] = {}
        self.saved: dict[str, Any] = {}
        self.changes = Changes()
        self.runs = 0

    async def run(self) -> None:
        if self.tracing is None:
            await self.steps(self.scenario["steps"])
            return
        # The steps in a span of the scenario's own, then close() (the client's span ends).
        with self.tracing.tracer.start_as_current_span("scenario"):
            await self.steps(self.scenario["steps"])
            await within(self.client.close(), "close()")
        # Every span is under the scenario's, but the client's life: a trace
        # of its own, linked to the scenario's span (its caller when it started).
        roots = sorted(self.tracing.tree(), key=lambda n: n.name != "scenario")
        assert [n.name for n in roots] == ["scenario", "koma.client"], (
            "every span is under the scenario's, and the client's span a root linked to it"
        )
        assert roots[1].links == ["scenario"], "the client's span links to the scenario's"
        check_spans(
            [roots[1]], [{"name": "koma.client", **on_this_system(self.scenario.get("client_span", {}))}], "client"
        )
        check_spans(roots[0].children, self.scenario["spans"], "scenario")

    async def steps(self, steps: list[dict[str, Any]]) -> None:
        for i, step in enumerate(steps):
            try:
                await self.step(step)
            except AssertionError as e:
                if getattr(e, "scenario_step", False):
                    raise
                raised = type(e)(f"step {i + 1} {json.dumps(step)}: {e}")
                raised.scenario_step = True  # type: ignore[attr-defined]
                raise raised from e

    def turn_rec(self, name: str) -> TurnRec:
        assert name in self.turns, f"no turn or run named {name}"
        return self.turns[name]

    def approvals(self, spec: Any, rec: TurnRec) -> Any:
        """What `approvals` says, as the option's value."""

        def called(request: Any) -> None:
            rec.requests.append(request)
            rec.calls += 1
            if rec.on_call is not None:
                rec.on_call()
            self.changes.notify()

        def fail() -> BaseException:
            e = RuntimeError("the approval function failed (the scenario's own error)")
            rec.thrown.append(e)
            return e

        if isinstance(spec, dict):
            return spec["raw"]
        if spec in ("allow", "deny"):
            return spec

        def fn_allow(request: Any) -> str:
            called(request)
            return "allow"

        def fn_deny(request: Any) -> str:
            called(request)
            return "deny"

        async def async_allow(request: Any) -> str:
            called(request)
            await anyio.lowlevel.checkpoint()
            return "allow"

        def throw(request: Any) -> str:
            called(request)
            raise fail()

        async def reject(request: Any) -> str:
            called(request)
            await anyio.lowlevel.checkpoint()
            raise fail()

        def bad(request: Any) -> str:
            called(request)
            return "yes"

        async def never(request: Any) -> str:
            called(request)
            await anyio.sleep_forever()
            return "allow"

        policies: dict[str, Any] = {
            "fn_allow": fn_allow,
            "fn_deny": fn_deny,
            "async_allow": async_allow,
            "throw": throw,
            "reject": reject,
            "bad": bad,
            "never": never,
        }
        assert spec in policies, f"unknown approvals {spec!r}"
        return policies[spec]

    def options(self, step: dict[str, Any], rec: TurnRec) -> dict[str, Any]:
        """The keyword arguments of turn() and run() that a step gives."""
        options: dict[str, Any] = {}
        if "approvals" in step:
            options["on_approval"] = self.approvals(step["approvals"], rec)
        if "mode" in step:
            options["mode"] = step["mode"]
        if "timeout_ms" in step:
            options["timeout"] = step["timeout_ms"] / 1000
        assert not step.get("signal"), "turn() has no signal in Python (a scenario using it says only: node)"
        if step.get("cancel_on_approval"):
            rec.cancel_on_approval = True
            rec.on_call = rec.scope.cancel
        if step.get("cancel_before"):
            rec.cancel_before = True
        return options

    def check_error(self, error: Any, step: dict[str, Any], what: str, rec: TurnRec | None = None) -> None:
        code = step.get("rejects", step.get("throws"))
        assert isinstance(error, KomaError), f"{what}: expected KomaError {code}, got {error!r}"
        assert error.code == code, f"{what}: {error}"
        if "remote" in step:
            assert error.remote is not None and error.remote.code == step["remote"], (
                f"{what}: the remote error of {error}"
            )
        if step.get("cause", "absent") == "handler":
            assert rec is not None and rec.thrown, f"{what}: the approval function threw nothing"
            assert error.__cause__ is rec.thrown[-1], (
                f"{what}: its cause is what the approval function raised, not {error.__cause__!r}"
            )
        if "cause" in step and step["cause"] is None:
            assert error.__cause__ is None, f"{what}: no cause, not {error.__cause__!r}"
        if "error_result" in step:
            check_turn_result(error.result, step["error_result"], f"{what}: error.result")

    async def settle(
        self,
        call: Awaitable[Any],
        step: dict[str, Any],
        what: str,
        check: Callable[[Any], None] | None = None,
        rec: TurnRec | None = None,
    ) -> Any:
        """How a call settled, checked against the step's `expect` or `rejects`."""
        failed = False
        value: Any = None
        error: BaseException | None = None
        started = time.monotonic()
        try:
            value = await within(call, what)
        except KomaError as e:
            failed, error = True, e
        check_within(step, started, what)
        return self.outcome(failed, value, error, step, what, check, rec)

    def outcome(
        self,
        failed: bool,
        value: Any,
        error: BaseException | None,
        step: dict[str, Any],
        what: str,
        check: Callable[[Any], None] | None,
        rec: TurnRec | None,
    ) -> Any:
        if "rejects" not in step:
            if failed:
                raise AssertionError(f"{what} failed: {error}") from error
            if "expect" in step:
                (check or (lambda v: check_subset(v, step["expect"], what)))(value)
            return value
        assert failed, f"{what}: expected {step['rejects']}, got {value!r}"
        self.check_error(error, step, what, rec)
        return error

    def kill(self) -> None:
        pid = self.client.pid
        assert pid, "the child runs"
        kill_hard(pid)

    async def run_call(self, step: dict[str, Any], rec: TurnRec, text: Any, options: dict[str, Any]) -> None:
        """A run(), its outcome kept in `rec` (cancelled: the task awaiting it was)."""
        with rec.scope:
            if rec.cancel_before:
                rec.scope.cancel()
            try:
                rec.value = await self.client.run(text, **options)
            except Exception as e:  # noqa: BLE001 - checked by the step
                rec.error = e
        rec.cancelled = rec.scope.cancelled_caught
        rec.done.set()

    async def run_outcome(self, rec: TurnRec, step: dict[str, Any], what: str) -> Any:
        await within(rec.done.wait(), what)
        if (rec.cancel_on_approval or rec.cancel_before) and step.get("rejects") == "aborted":
            # Python stops a run by cancelling the task that awaits it: the
            # cancellation propagates; there is no error to look at.
            assert rec.cancelled, f"{what}: the task awaiting run() was not cancelled ({rec.value!r}, {rec.error!r})"
            assert rec.error is None and rec.value is None
            return None
        assert not rec.cancelled, f"{what}: cancelled"
        if rec.error is not None and not isinstance(rec.error, KomaError):
            raise AssertionError(f"{what}: {rec.error!r}") from rec.error
        expect = step.get("expect")
        return self.outcome(
            rec.error is not None,
            rec.value,
            rec.error,
            step,
            what,
            lambda v: check_turn_result(v, expect, what) if expect is not None else None,
            rec,
        )

    async def step(self, step: dict[str, Any]) -> Any:
        c = self.client
        do = step["do"]
        if do == "create":
            return await self.settle(c.create(), step, "create()")
        if do == "submit":
            return await self.settle(c.submit(step["text"]), step, "submit()")
        if do == "enqueue":
            return await self.settle(c.enqueue(step["text"]), step, "enqueue()")
        if do == "configure":
            return await self.settle(c.configure(model=step.get("model")), step, "configure()")
        if do == "request":
            return await self.settle(c.request(step["method"], step.get("params")), step, f"request({step['method']})")
        if do == "state":
            return await self.settle(c.state(), step, "state()")
        if do == "wait_state":
            try:
                with anyio.fail_after(HANG):
                    while (await c.state()).status != step["status"]:
                        pass
            except TimeoutError as e:
                if isinstance(e, KomaError):  # the package's own timeout is one too
                    raise
                raise Hang(f"the state never became {step['status']}") from None
            return None
        if do == "approve":
            assert step["approval"] in self.saved, f"no approval saved as {step['approval']}"
            approval = self.saved[step["approval"]]["approval"]
            return await self.settle(c.approve(approval, step["decision"]), step, "approve()")
        if do == "interrupt":
            if "turn" not in step:
                return await self.settle(c.interrupt(), step, "interrupt()")
            return await self.settle(self.turn_rec(step["turn"]).turn.interrupt(), step, f"{step['turn']}.interrupt()")
        if do == "close":
            return await within(c.close(), "close()")
        if do == "kill":
            return self.kill()
        if do == "repeat":
            for _ in range(step["times"]):
                await self.steps(step["steps"])
            return None
        if do == "turn":
            rec = TurnRec("turn")
            rec.turn = c.turn(step["text"], **self.options(step, rec))
            self.turns[step["as"]] = rec
            return None
        if do == "run":
            self.runs += 1
            rec = TurnRec("run")
            options = self.options(step, rec)
            what = f"run {step.get('as', self.runs)}"
            if "as" in step:
                self.turns[step["as"]] = rec
                self.tg.start_soon(self.run_call, step, rec, step["text"], options)
                return None
            started = time.monotonic()
            await within(self.run_call(step, rec, step["text"], options), what)
            check_within(step, started, what)
            return await self.run_outcome(rec, step, what)
        if do == "await_handler":
            rec = self.turn_rec(step["of"])
            calls = step.get("calls", 1)
            await self.changes.until(lambda: rec.calls >= calls, f"the approval function of {step['of']} to be called")
            if "request" in step:
                check_subset(rec.requests[0], step["request"], f"what the approval function of {step['of']} was given")
            return None
        if do == "result":
            rec = self.turn_rec(step["turn"])
            what = f"{step['turn']}.result()"
            if rec.kind == "run":
                started = time.monotonic()
                outcome = await self.run_outcome(rec, step, what)
                check_within(step, started, what)
                return outcome
            expect = step.get("expect")
            return await self.settle(
                rec.turn.result(),
                step,
                what,
                lambda v: check_turn_result(v, expect, what) if expect is not None else None,
                rec,
            )
        if do == "id":
            rec = self.turn_rec(step["turn"])
            what = f"{step['turn']}.id()"

            def same(v: Any) -> None:
                assert v == step["expect"], f"{what}: {v!r}"

            return await self.settle(rec.turn.id(), step, what, same, rec)
        if do == "loop":
            return await self.loop(step)
        if do == "seqs_cover":
            seqs: list[int] = []
            for name in step["of"]:
                if name in self.turns:
                    seqs += self.turns[name].seqs
                else:
                    seqs += [i.seq for i in self.loops[name].items if i.type == "event"]
            seqs.sort()
            assert seqs, "no event taken"
            for a, b in zip(seqs, seqs[1:], strict=False):
                assert b != a, f"seq {b} was taken twice"
                assert b == a + 1, f"seq {a + 1} was taken by none of {', '.join(step['of'])}"
            return None
        if do == "events_loop":
            loop = LoopRec()
            self.loops[step["as"]] = loop
            self.tg.start_soon(self.events_loop, step, loop)
            return None
        if do == "events_resume":
            self.loops[step["as"]].resume.set()
            return None
        if do == "events_break":
            loop = self.loops[step["as"]]
            loop.scope.cancel()
            return await self.changes.until(lambda: loop.ended, f"{step['as']} to end")
        if do == "events_expect":
            loop = self.loops[step["as"]]
            need = max(len(expand(step.get("names", []))), len(expand(step.get("starts_with", []))))
            ended = bool(step.get("ended"))
            # Waits for that many items, or for the first one that differs.
            wanted = expand(step.get("names", step.get("starts_with", [])))

            def differs() -> bool:
                return any(name_of(item) != want for item, want in zip(loop.items, wanted, strict=False))

            await self.changes.until(
                lambda: loop.ended or (not ended and len(loop.items) >= need) or differs(),
                lambda: (
                    f"{step['as']} to take {need} items{' and end' if ended else ''} (it took [{squeeze([name_of(i) for i in loop.items])}])"
                ),
            )
            check_items(loop.items, step, step["as"])
            if ended:
                if "throws" in step:
                    self.check_error(loop.error, step, f"{step['as']}'s error")
                else:
                    assert loop.error is None, f"{step['as']} ended with {loop.error!r}"
            return None
        if do == "held_in_package":
            # The events the package took from the core and has not handed
            # out yet (the cursor of the client's own stream), and the Turns it
            # keeps (a run's, until its turn is over).
            cursor = c._queue._cursor
            held = max(0, len(cursor._batch) - cursor._index) // STRIDE
            assert held == step["expect"], f"the package holds {held} events"
            assert not c._link.turns, f"the package keeps {len(c._link.turns)} Turns"
            return None
        raise AssertionError(f"unknown step {step!r}")

    async def loop(self, step: dict[str, Any]) -> None:
        """A loop over a Turn, to its end (or its break), then what it saw."""
        c = self.client
        rec = self.turn_rec(step["turn"])
        expect = step.get("expect", {})
        what = f"the loop over {step['turn']}"
        items: list[Any] = []
        done: set[str] = set()

        def once(field: str, name: str) -> bool:
            if step.get(field) == name and field not in done:
                done.add(field)
                return True
            return False

        async def body(item: Any) -> str | None:
            """The loop's body: "break" when it breaks, "return" when it leaves by aclose()."""
            items.append(item)
            if item.type == "event":
                rec.seqs.append(item.seq)
            name = name_of(item)
            keep = step.get("save", {}).get(name)
            if keep is not None and keep not in self.saved:
                self.saved[keep] = item.data
            if step.get("answer_approvals") and name == "approval_requested":
                await c.approve(item.data["approval"], step["answer_approvals"])
            if once("interrupt_after", name):
                await rec.turn.interrupt()
            if once("close_after", name):
                await c.close()
            if once("kill_after", name):
                self.kill()
            assert not step.get("abort_after"), "turn() has no signal in Python (a scenario using it says only: node)"
            if once("raise_after", name):
                raise BodyError()
            if once("break_after", name):
                return "break"
            if once("return_after", name):
                return "return"
            if once("leave_waiting_after", name):
                return "leave_waiting"
            return None

        thrown: BaseException | None = None
        raised = False
        started = time.monotonic()
        try:
            with anyio.fail_after(HANG):
                if step.get("leave_waiting_after"):
                    # After that event the loop waits for its next item, and
                    # the task it runs in is cancelled while it waits; the
                    # cancellation is kept alive, with the loop's frames.
                    scope = anyio.CancelScope()

                    async def cancel_when_waiting() -> None:
                        await anyio.wait_all_tasks_blocked()
                        scope.cancel()

                    with scope:
                        try:
                            async for item in rec.turn:
                                if await body(item) == "leave_waiting":
                                    self.tg.start_soon(cancel_when_waiting)
                        except BaseException as e:
                            rec.kept_exception = e
                            raise
                    assert scope.cancelled_caught, f"{what} was not cancelled while it waited"
                elif step.get("return_after"):
                    # Driven by hand, and left by the iterator's aclose().
                    it = rec.turn.__aiter__()
                    while True:
                        try:
                            item = await it.__anext__()
                        except StopAsyncIteration:
                            break
                        if await body(item) == "return":
                            await it.aclose()
                            break
                else:
                    # kept_iterator: the program keeps the iterator it loops over.
                    source = rec.kept = rec.turn.__aiter__() if step.get("kept_iterator") else rec.turn
                    async for item in source:
                        if await body(item) == "break":
                            break
        except KomaError as e:  # before TimeoutError: the package's timeout is one too
            thrown = e
        except TimeoutError as e:
            if isinstance(e, KomaError):  # the package's own timeout is one too
                raise
            raise Hang(
                f"gave up after {HANG} s waiting for {what}; it took [{squeeze([name_of(i) for i in items])}]"
            ) from None
        except BodyError:
            raised = True
        check_within(step, started, what)
        check_items(items, expect, what)
        if expect.get("raised") == "body":
            assert raised, f"{what} did not let its body's error through ({thrown!r})"
        elif "throws" in expect:
            assert thrown is not None, f"{what} ended normally; expected it to raise {expect['throws']}"
            self.check_error(thrown, expect, what, rec)
            try:
                await within(rec.turn.result(), f"{step['turn']}.result()")
            except KomaError as e:
                assert e is thrown, (
                    f"{what} raises the very error {step['turn']}.result() raises ({e!r}, not {thrown!r})"
                )
            else:
                raise AssertionError(f"{what} raised {thrown!r}, but {step['turn']}.result() returned")
        else:
            assert thrown is None, f"{what} raised {thrown!r}"
            assert not raised

    async def events_loop(self, step: dict[str, Any], loop: LoopRec) -> None:
        """A loop over client.events() in the background."""
        with loop.scope:
            try:
                async for item in self.client.events():
                    loop.items.append(item)
                    name = name_of(item)
                    keep = step.get("save", {}).get(name)
                    if keep is not None and keep not in self.saved and item.type == "event":
                        self.saved[keep] = item.data
                    self.changes.notify()
                    if name == step.get("pause_after") and not loop.paused:
                        loop.paused = True
                        await loop.resume.wait()
                    if name == step.get("break_after"):
                        break
            except Exception as e:  # noqa: BLE001 - checked by events_expect
                loop.error = e
        loop.ended = True
        self.changes.notify()


@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_scenario(sim_client: MakeClient, fake_koma: FakeKomaFactory, scenario: dict[str, Any]) -> None:
    sim = scenario.get("sim", {})
    koma = None
    # A scenario that says its spans is traced, with an in-memory exporter.
    tracing = Tracing() if "spans" in scenario else None
    traced = tracing.providers() if tracing is not None else {}
    if "scenario" in sim:
        # koma-sim plays a script (koma_sdk.testing: checked, written, recorded).
        faults = ",".join(sim.get("faults", ()))
        env = {**({"KOMA_SIM_FAULT": faults} if faults else {}), **sim.get("env", {})}
        koma = fake_koma(sim["scenario"], executable=SIM, delay_ms=sim.get("delay_ms", 0), env=env)
        # A traced scenario's client is made here, with the fake's options (the fake closes its own).
        c = Client(koma.executable, env=koma.env, **traced) if traced else koma.client
    else:
        c = sim_client(faults=sim.get("faults", ()), delay_ms=sim.get("delay_ms", 0), env=sim.get("env"), **traced)
    failure: BaseException | None = None
    async with anyio.create_task_group() as tg:
        try:
            await Runner(c, tg, scenario, tracing).run()
        except Exception as e:  # noqa: BLE001 - raised below, outside the task group
            failure = e
        # What still runs in the background (a loop over events(), a run
        # waiting on its handler) ends with the client.
        tg.cancel_scope.cancel()
    if koma is not None:
        if c is not koma.client:
            await c.close()
        await koma.aclose()
    if failure is not None:
        raise failure
