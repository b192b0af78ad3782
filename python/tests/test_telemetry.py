"""OpenTelemetry (README, "Tracing with OpenTelemetry"): the spans and metrics
of a traced client, through koma-sim and the SDK's in-memory exporter and
metric reader, under asyncio and trio (the twin of telemetry.test.mjs). Each
test gives its client its own providers; the caller's context is contextvars'."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode
from tracing_picture import picture

from helpers import ROOT, SIM, WINDOWS_KILL_EXIT, raises
from koma_sdk import Client, KomaError
from koma_sdk.testing import FakeKoma
from spans import Node, Tracing, find, shape

pytestmark = pytest.mark.anyio

DEPLOY: list[dict[str, Any]] = [
    {
        "match": {"contains": "deploy"},
        "times": "always",
        "steps": [
            {"do": "output", "text": "Testing."},
            {"do": "tool", "tool": "run_tests", "input": {"suite": "all"}, "output": "42 passed"},
            {
                "do": "approval",
                "tool": "git_push",
                "input": {"remote": "origin"},
                "allow": {"output": "pushed"},
                "deny": {
                    "output": "not pushed",
                    "steps": [{"do": "finish", "status": "failed", "error": "the push was denied"}],
                },
            },
            {"do": "output", "text": " Deployed."},
        ],
    }
]


@asynccontextmanager
async def fake(
    turns: list[dict[str, Any]],
    t: Tracing,
    scenario: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    **options: Any,
) -> AsyncIterator[tuple[FakeKoma, Client]]:
    """koma-sim playing `turns`, and a client of it traced with `t`'s providers."""
    async with FakeKoma({"turns": turns, **(scenario or {})}, env=env) as koma:
        client = Client(koma.executable, env=koma.env, **t.providers(), **options)
        try:
            yield koma, client
        finally:
            await client.close()


def turns_of(nodes: list[Node]) -> list[Node]:
    return [n for n in nodes if n.name == "invoke_agent koma"]


def root(t: Tracing, name: str) -> Node:
    """The one root span named `name`."""
    (found,) = [n for n in t.tree() if n.name == name]
    return found


def in_trace(node: Node, trace_id: int | None = None) -> None:
    """Every span under `node` is in its trace."""
    trace_id = node.span.context.trace_id if trace_id is None else trace_id
    for c in node.children:
        assert c.span.context.trace_id == trace_id, f"{c.name} in {node.name}'s trace"
        in_trace(c, trace_id)


# A task that runs the tests: one tool call, no approval.
QUICK: list[dict[str, Any]] = [
    {
        "times": "always",
        "steps": [{"do": "tool", "tool": "run_tests", "output": "42 passed"}, {"do": "output", "text": "Done."}],
    }
]
TASK = [["koma create"], ["invoke_agent koma", [["execute_tool run_tests"]]], ["koma close"]]


async def test_a_client_per_request_its_calls_turn_and_close_in_the_request_its_life_a_trace_linked_to_it() -> None:
    t = Tracing()

    async def handle(name: str) -> None:
        with t.tracer.start_as_current_span(name):
            async with FakeKoma({"turns": QUICK}) as koma:
                async with Client(koma.executable, env=koma.env, **t.providers()) as client:
                    await client.create()
                    await client.run(name, on_approval="deny")

    async with anyio.create_task_group() as tg:
        tg.start_soon(handle, "request 1")
        tg.start_soon(handle, "request 2")
    roots = t.tree()
    assert sorted(n.name for n in roots) == ["koma.client", "koma.client", "request 1", "request 2"]
    for name in ("request 1", "request 2"):
        request = root(t, name)
        assert shape(request.children) == TASK, name
        in_trace(request)
        # Its client: the root linked to this request, which each call and the turn link to.
        (client,) = [n for n in roots if n.name == "koma.client" and n.links == [name]]
        assert client.span.context.trace_id != request.span.context.trace_id
        for call in request.children:
            linked = [link.context.span_id for link in call.span.links]
            assert linked == [client.span.context.span_id], f"{name} > {call.name} links to its own client's span"


async def test_one_client_shared_by_20_concurrent_requests_gives_20_request_traces_each_with_its_calls_and_turn() -> (
    None
):
    t = Tracing()
    async with FakeKoma({"turns": QUICK}) as koma:
        client = Client(koma.executable, env=koma.env, **t.providers())
        with t.tracer.start_as_current_span("startup"):
            await client.create()
        # A session runs one turn at a time: the requests take turns on it.
        lock = anyio.Lock()

        async def handle(i: int) -> None:
            with t.tracer.start_as_current_span(f"request {i}"):
                await client.state()
                async with lock:
                    await client.run(f"task {i}", on_approval="deny")

        async with anyio.create_task_group() as tg:
            for i in range(1, 21):
                tg.start_soon(handle, i)
        with t.tracer.start_as_current_span("shutdown"):
            await client.close()
        env = json.loads(koma.record_path.read_text().splitlines()[0])["env"]
    roots = t.tree()
    assert len(roots) == 23, "startup, the client, 20 requests, shutdown: every span under one of them"
    assert shape([root(t, "startup")]) == [["startup", [["koma create"]]]]
    assert shape([root(t, "shutdown")]) == [["shutdown", [["koma close"]]]]
    life = root(t, "koma.client")
    assert (life.links, life.children) == (["startup"], []), "a root of its own, linked to the span that started it"
    turns = set()
    for i in range(1, 21):
        request = root(t, f"request {i}")
        assert shape(request.children) == [["koma state"], ["invoke_agent koma", [["execute_tool run_tests"]]]]
        in_trace(request)
        for call in request.children:
            assert call.links == ["koma.client"]
        turns.add(request.children[1].attributes["koma.turn.id"])
    assert len(turns) == 20, "20 turns, one under each request"
    assert len({n.span.context.trace_id for n in roots}) == 23, "every request a trace of its own"
    # koma got the client's context: its life's, not any request's.
    ctx = life.span.context
    assert env["TRACEPARENT"] == f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


async def test_a_turn_with_two_tools_and_an_approval_gives_a_span_per_call_the_approval_under_its_call() -> None:
    t = Tracing()
    async with fake(DEPLOY, t) as (_, c):
        with t.tracer.start_as_current_span("request"):
            await c.create()
            await c.run("deploy 1", on_approval="allow")
            await c.run("deploy 2", on_approval="deny")
    # (The roots in this order: the application's span starts at the SDK's own clock.)
    assert len(t.tree()) == 3
    roots = [root(t, name) for name in ("request", "koma.client", "koma close")]
    turn = ["invoke_agent koma", [["execute_tool run_tests"], ["execute_tool git_push", [["approval git_push"]]]]]
    # The client's life is a trace of its own (started within the request,
    # linked to it); close() was called outside the request.
    assert shape(roots) == [["request", [["koma create"], turn, turn]], ["koma.client"], ["koma close"]]
    assert roots[1].links == ["request"]
    for call in [*roots[0].children, roots[2]]:
        assert call.links == ["koma.client"], f"{call.name} links to the client's span"
    allowed, denied = turns_of(roots[0].children)
    assert allowed.span.kind == SpanKind.CLIENT
    conversation = allowed.attributes.pop("gen_ai.conversation.id")
    assert str(conversation).startswith("s-"), "the session is the conversation"
    assert allowed.attributes == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "koma",
        "gen_ai.provider.name": "koma",
        "koma.turn.id": "t-1",
        "koma.turn.mode": "submit",
        "koma.turn.status": "completed",
        "koma.turn.events": allowed.attributes["koma.turn.events"],
        "koma.turn.output_events": 2,
        "koma.turn.tool_calls": 2,
        "koma.turn.overflowed": False,
    }
    assert allowed.status == StatusCode.UNSET
    tests, push = allowed.children
    assert tests.attributes == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "run_tests",
        "gen_ai.tool.call.id": "c-1",
        "koma.tool.outcome": "ok",
    }
    assert tests.span.kind == SpanKind.INTERNAL
    approval = push.children[0]
    assert approval.attributes == {
        "koma.approval.id": "a-1",
        "gen_ai.tool.name": "git_push",
        "gen_ai.tool.call.id": "c-2",
        "koma.approval.decision": "allow",
        "koma.approval.answered_by": "policy",
    }
    for parent, child in [(allowed, tests), (allowed, push), (push, approval)]:
        assert parent.start <= child.start and child.end <= parent.end, f"{child.name} within {parent.name}"
    assert tests.end <= push.start
    assert denied.attributes["koma.turn.status"] == "failed"
    assert (denied.error, denied.status) == ("turn_failed", StatusCode.ERROR)
    assert denied.span.status.description == "the push was denied"
    denied_push = denied.children[1]
    assert (denied_push.attributes["koma.tool.outcome"], denied_push.error) == ("denied", "tool_error")
    assert denied_push.children[0].attributes["koma.approval.decision"] == "deny"


async def test_an_approval_function_runs_in_the_turn_spans_context_and_approve_answers_as_approve() -> None:
    t = Tracing()
    seen: list[int] = []

    async def handler(request: Any) -> str:
        await anyio.lowlevel.checkpoint()
        seen.append(trace.get_current_span().get_span_context().span_id)
        t.tracer.start_span("ask a person").end()
        return "allow"

    async with fake(DEPLOY, t) as (_, c):
        await c.create()
        await c.run("deploy", on_approval=handler)
        turn = c.turn("deploy again")
        async for e in turn:
            if e.type == "event" and e.name == "approval_requested":
                await c.approve(e.data["approval"], "allow")
    by_handler, by_approve = turns_of(t.tree())
    assert seen == [by_handler.span.context.span_id], "the handler ran in the turn's context"
    assert sorted(n.name for n in by_handler.children) == [
        "ask a person",
        "execute_tool git_push",
        "execute_tool run_tests",
    ]
    a = find([by_handler], "approval git_push")
    assert a is not None and a.attributes["koma.approval.answered_by"] == "handler"
    b = find([by_approve], "approval git_push")
    assert b is not None and b.attributes["koma.approval.answered_by"] == "approve"
    assert any(n.name == "koma approve" for n in t.tree()), "approve() has a call span of its own"


async def test_a_turn_that_fails_when_koma_crashes_mid_turn_says_transport_failure() -> None:
    t = Tracing()
    crash = [
        {
            "steps": [
                {"do": "tool", "tool": "run_tests", "output": "ok"},
                {"do": "output", "text": "Oh no"},
                {"do": "crash", "signal": "SIGKILL"},
            ]
        }
    ]
    async with fake(crash, t) as (_, c):
        await c.create()
        e = await raises(c.run("go", on_approval="deny"))
        assert e.code == "transport_failure"
    turn = turns_of(t.tree())[0]
    assert (turn.error, turn.status) == ("transport_failure", StatusCode.ERROR)
    assert turn.attributes["koma.turn.status"] == "unknown"
    assert shape(turn.children) == [["execute_tool run_tests"]]
    client = find(t.tree(), "koma.client")
    assert client is not None and client.error == "transport_failure"
    if sys.platform == "win32":
        # Windows has no signals: a crash step of SIGKILL ends koma-sim.exe with exit code 1 (docs/koma-sim.md, "On Windows").
        assert "koma.exit.signal" not in client.attributes
        assert client.attributes["process.exit.code"] == WINDOWS_KILL_EXIT
    else:
        assert client.attributes["koma.exit.signal"] == 9
    assert isinstance(client.attributes["process.pid"], int)
    m = t.metrics()
    assert [(dict(p.attributes), p.value) for p in m["koma.client.failures"][1]] == [
        ({"error.type": "transport_failure"}, 1)
    ]
    assert m["koma.client.starts"][1][0].value == 1
    unit, points = m["gen_ai.client.operation.duration"]
    assert unit == "s"
    assert dict(points[0].attributes) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "koma",
        "error.type": "transport_failure",
    }


async def test_a_timed_out_turn_says_timeout_and_kumas_interrupted_status() -> None:
    t = Tracing()
    async with fake([{"steps": [{"do": "output", "text": "Thinking"}, {"do": "pause"}]}], t) as (_, c):
        await c.create()
        e = await raises(c.run("slow", on_approval="deny", timeout=0.05))
        assert e.code == "timeout"
    turn = turns_of(t.tree())[0]
    assert turn.error == "timeout"
    assert turn.attributes["koma.turn.status"] == "interrupted"
    assert "within 0.05 s" in str(turn.span.status.description)


async def test_a_methods_error_is_its_spans_error_type_with_a_remote_errors_code_beside_it() -> None:
    t = Tracing()
    busy = {"methods": [{"method": "submit", "error": {"code": "busy", "message": "a turn is running"}}]}
    async with fake([], t, busy) as (_, c):
        await c.create()
        assert (await raises(c.submit("x"))).code == "remote"
        assert (await raises(c.request("approve", {}))).code == "invalid_params"
        assert (await raises(c.request("no_such_method", {}))).code == "unsupported"
    roots = t.tree()
    submit = next(n for n in roots if n.name == "koma submit")
    assert submit.span.kind == SpanKind.CLIENT
    assert submit.attributes == {
        "rpc.system": "koma",
        "rpc.method": "submit",
        "koma.remote.code": "busy",
        "error.type": "remote",
    }
    assert submit.status == StatusCode.ERROR
    assert next(n for n in roots if n.name == "koma approve").error == "invalid_params"
    assert next(n for n in roots if n.name == "koma no_such_method").error == "unsupported"
    assert next(n for n in roots if n.name == "koma create").status == StatusCode.UNSET


async def test_a_client_that_fails_to_start_says_spawn_failed_and_counts_it() -> None:
    t = Tracing()
    c = Client("/nonexistent/koma", **t.providers())
    assert (await raises(c.probe())).code == "spawn_failed"
    await c.close()
    roots = t.tree()
    assert shape(roots) == [["koma.client"], ["koma probe"], ["koma close"]]
    client = roots[0]
    assert client.error == "spawn_failed"
    assert "nonexistent" in str(client.span.status.description)
    assert "process.pid" not in client.attributes
    assert roots[1].error == "spawn_failed"
    m = t.metrics()
    assert [dict(p.attributes) for p in m["koma.client.failures"][1]] == [{"error.type": "spawn_failed"}]
    assert "koma.client.starts" not in m, "nothing started"


async def test_koma_is_started_with_the_client_spans_context_and_env_wins() -> None:
    t = Tracing()
    async with fake([], t) as (koma, c):
        with t.tracer.start_as_current_span("request"):
            await c.create()
        await c.close()  # the client's span ends
        record = json.loads(koma.record_path.read_text().splitlines()[0])
    client = find(t.tree(), "koma.client")
    assert client is not None
    ctx = client.span.context
    # The flags as the span context has them (the SDK may set W3C's random bit beside sampled).
    parent = f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"
    assert record["env"] == {"TRACEPARENT": parent, "TRACESTATE": ""}
    assert int(ctx.trace_flags) & 1, "sampled"
    request = next(s for s in t.spans() if s.name == "request")
    assert ctx.trace_id != request.context.trace_id, "the client's life is a trace of its own"
    assert client.span.parent is None, "a root"
    linked = [(link.context.trace_id, link.context.span_id) for link in client.span.links]
    assert linked == [(request.context.trace_id, request.context.span_id)], "linked to the request that started it"
    assert [e.name for e in client.span.events] == ["spawned", "hello", "detach", "exit"], "the moments of its life"

    mine = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    async with fake([], t, env={"TRACEPARENT": mine}) as (koma, c):
        await c.create()
        record = json.loads(koma.record_path.read_text().splitlines()[0])
    assert record["env"] == {"TRACEPARENT": mine}


@pytest.mark.parametrize("capture", [False, True])
async def test_content_is_recorded_only_when_the_application_opts_in(capture: bool) -> None:
    content_keys = {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    }

    def keys(nodes: list[Node]) -> list[str]:
        return [k for n in nodes for k in [*n.attributes, *keys(n.children)]]

    t = Tracing()
    options = {"capture_content": True} if capture else {}
    async with fake(DEPLOY, t, **options) as (_, c):
        await c.create()
        await c.run("deploy secrets", on_approval="allow")
    turn = turns_of(t.tree())[0]
    found = {k for k in keys([turn]) if k in content_keys}
    if not capture:
        assert found == set()
        assert "secrets" not in json.dumps([dict(s.attributes or {}) for s in t.spans()])
        return
    assert found == content_keys
    assert json.loads(turn.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "deploy secrets"}]}
    ]
    assert json.loads(turn.attributes["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "Testing. Deployed."}],
            "finish_reason": "completed",
        }
    ]
    tests = find([turn], "execute_tool run_tests")
    assert tests is not None
    assert tests.attributes["gen_ai.tool.call.arguments"] == '{"suite":"all"}'
    assert tests.attributes["gen_ai.tool.call.result"] == '"42 passed"'


async def test_metrics_turn_duration_tool_calls_by_tool_and_outcome_approval_wait_client_starts() -> None:
    t = Tracing()
    async with fake(DEPLOY, t) as (_, c):
        await c.create()
        await c.run("deploy", on_approval="allow")
        await c.run("deploy", on_approval="deny")
        m = t.metrics()
    durations = sorted((str(p.attributes.get("error.type")), p.count) for p in m["gen_ai.client.operation.duration"][1])
    assert durations == [("None", 1), ("turn_failed", 1)], "a failed turn's duration has its error.type"
    unit, calls = m["koma.tool.calls"]
    assert unit == "{call}"

    def count(tool: str, outcome: str) -> int | None:
        for p in calls:
            if p.attributes["gen_ai.tool.name"] == tool and p.attributes["koma.tool.outcome"] == outcome:
                return int(p.value)
        return None

    assert [count("run_tests", "ok"), count("git_push", "ok"), count("git_push", "denied")] == [2, 1, 1]
    waits = sorted(
        (p.attributes["koma.approval.decision"], p.attributes["koma.approval.answered_by"], p.count)
        for p in m["koma.approval.duration"][1]
    )
    assert waits == [("allow", "policy", 1), ("deny", "policy", 1)]
    assert m["koma.client.starts"][1][0].value == 1


async def test_telemetry_off_or_no_provider_records_nothing_and_imports_nothing() -> None:
    t = Tracing()
    async with fake(DEPLOY, t, telemetry=False) as (koma, c):
        await c.create()
        await c.run("deploy", on_approval="allow")
        record = json.loads(koma.record_path.read_text().splitlines()[0])
    assert t.spans() == []
    assert "env" not in record, "no TRACEPARENT"
    assert t.metrics() == {}
    # A process that sets no provider: the package imports no OpenTelemetry.
    script = f"""
import asyncio, json, sys, tempfile
from koma_sdk import Client
async def main():
    async with Client({SIM!r}, env={{"KOMA_SIM_HOME": tempfile.mkdtemp()}}) as c:
        await c.create()
        r = await c.run("fix notes.txt", on_approval="allow")
    print(json.dumps({{"status": r.status, "loaded": sorted(m for m in sys.modules if m.startswith("opentelemetry"))}}))
asyncio.run(main())
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"status": "completed", "loaded": []}


def test_bad_telemetry_options_are_invalid_params_naming_the_option() -> None:
    bad: list[tuple[dict[str, Any], str]] = [
        ({"telemetry": "yes"}, "`telemetry` must be a bool"),
        ({"capture_content": 1}, "`capture_content` must be a bool"),
        ({"tracer_provider": object()}, "`tracer_provider` must be an OpenTelemetry TracerProvider"),
        ({"meter_provider": 5}, "`meter_provider` must be an OpenTelemetry MeterProvider"),
    ]
    for options, message in bad:
        with pytest.raises(KomaError) as info:
            Client(SIM, **options)
        assert info.value.code == "invalid_params"
        assert message in info.value.message


async def test_the_picture_of_the_docs_is_drawn_from_exported_spans() -> None:
    rows = (await picture()).split("\n")
    assert [r.split("|")[0].rstrip() for r in rows] == [
        "POST /deploy",
        "  koma create",
        "  invoke_agent koma",
        "    execute_tool run_tests",
        "    execute_tool git_push",
        "      approval git_push",
        "  koma close",
        "koma.client",
    ]
    assert rows[5].endswith("koma.approval.decision=allow koma.approval.answered_by=handler")
    assert rows[7].endswith("process.exit.code=0 link: POST /deploy")


def test_the_tracing_example_prints_its_requests_trace_with_komas_spans_in_it() -> None:
    example = ROOT / "python" / "examples" / "tracing.py"
    r = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    for name in (
        "handle request",
        "koma.client",
        "koma create",
        "invoke_agent koma",
        "execute_tool write_file",
        "approval write_file",
    ):
        assert f'"name": "{name}"' in r.stdout, r.stdout
    assert "turn t-1: completed" in r.stdout
    for metric in (
        "gen_ai.client.operation.duration",
        "koma.tool.calls",
        "koma.approval.duration",
        "koma.client.starts",
    ):
        assert f'"name": "{metric}"' in r.stdout, f"the metric {metric} in {r.stdout}"
