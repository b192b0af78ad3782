// OpenTelemetry (docs/tracing.md): the spans and metrics of a traced client,
// through koma-sim and the SDK's in-memory exporter and metric reader. Each
// test gives its client its own providers; the caller's context follows
// async calls (spans.mjs registers the SDK's context manager).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { createRequire } from "node:module";
import { Client, SIM, root, tempHome } from "./helpers.mjs";
import { api, find, shape, tracing } from "./spans.mjs";
import { picture } from "./tracing-picture.mjs";

const { FakeKoma } = createRequire(import.meta.url)(join(root, "testing.js"));
const T = { timeout: 60_000 };

/** koma-sim playing `turns`, its client traced with `t`'s providers (and `client` options, koma-sim's `env`). */
function fake(ctx, turns, t, client = {}, scenario = {}, env = {}) {
  const koma = new FakeKoma(
    { turns, ...scenario },
    { env, client: { tracerProvider: t.tracerProvider, meterProvider: t.meterProvider, ...client } },
  );
  ctx.after(() => koma.close());
  return koma;
}

const DEPLOY = [
  {
    match: { contains: "deploy" },
    times: "always",
    steps: [
      { do: "output", text: "Testing." },
      { do: "tool", tool: "run_tests", input: { suite: "all" }, output: "42 passed" },
      {
        do: "approval",
        tool: "git_push",
        input: { remote: "origin" },
        allow: { output: "pushed" },
        deny: { output: "not pushed", steps: [{ do: "finish", status: "failed", error: "the push was denied" }] },
      },
      { do: "output", text: " Deployed." },
    ],
  },
];

test("a turn with two tools and an approval: the turn span holds a span per tool call, the approval under its call", T, async (ctx) => {
  const t = tracing();
  const koma = fake(ctx, DEPLOY, t);
  const c = koma.client;
  await t.tracer.startActiveSpan("request", async (request) => {
    await c.create({});
    await c.run({ text: "deploy 1" }, { onApproval: "allow" });
    await c.run({ text: "deploy 2" }, { onApproval: "deny" });
    request.end();
  });
  await c.close();
  // (The roots in this order: the application's span starts at the SDK's whole millisecond.)
  const roots = ["request", "koma.client", "koma close"].map((name) => t.tree().find((n) => n.name === name));
  const turn = ["invoke_agent koma", [["execute_tool run_tests"], ["execute_tool git_push", [["approval git_push"]]]]];
  // The client's life is a trace of its own (started within the request, linked to it); close() was called outside the request.
  assert.equal(t.tree().length, 3);
  assert.deepEqual(shape(roots), [["request", [["koma create"], turn, turn]], ["koma.client"], ["koma close"]]);
  assert.deepEqual(roots[1].links, ["request"]);
  for (const call of [...roots[0].children, roots[2]])
    assert.deepEqual(call.links, ["koma.client"], `${call.name} links to the client's span`);
  const [allowed, denied] = roots[0].children.filter((n) => n.name === "invoke_agent koma");
  assert.equal(allowed.span.kind, api.SpanKind.CLIENT);
  assert.deepEqual(
    { ...allowed.attributes, "gen_ai.conversation.id": undefined },
    {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "koma",
      "gen_ai.provider.name": "koma",
      "gen_ai.conversation.id": undefined,
      "koma.turn.id": "t-1",
      "koma.turn.mode": "submit",
      "koma.turn.status": "completed",
      "koma.turn.events": allowed.attributes["koma.turn.events"],
      "koma.turn.output_events": 2,
      "koma.turn.tool_calls": 2,
      "koma.turn.overflowed": false,
    },
  );
  assert.match(String(allowed.attributes["gen_ai.conversation.id"]), /^s-/, "the session is the conversation");
  assert.equal(allowed.status, api.SpanStatusCode.UNSET);
  const [tests, push] = allowed.children;
  assert.deepEqual(tests.attributes, {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "run_tests",
    "gen_ai.tool.call.id": "c-1",
    "koma.tool.outcome": "ok",
  });
  assert.equal(tests.span.kind, api.SpanKind.INTERNAL);
  const approval = push.children[0];
  assert.deepEqual(approval.attributes, {
    "koma.approval.id": "a-1",
    "gen_ai.tool.name": "git_push",
    "gen_ai.tool.call.id": "c-2",
    "koma.approval.decision": "allow",
    "koma.approval.answered_by": "policy",
  });
  // Each child within its parent, in the order koma did them.
  for (const [parent, child] of [
    [allowed, tests],
    [allowed, push],
    [push, approval],
  ])
    assert.ok(parent.start <= child.start && child.end <= parent.end, `${child.name} within ${parent.name}`);
  assert.ok(tests.end <= push.start);

  assert.equal(denied.attributes["koma.turn.status"], "failed");
  assert.equal(denied.error, "turn_failed");
  assert.equal(denied.status, api.SpanStatusCode.ERROR);
  assert.equal(denied.span.status.message, "the push was denied");
  const deniedPush = denied.children[1];
  assert.equal(deniedPush.attributes["koma.tool.outcome"], "denied");
  assert.equal(deniedPush.error, "tool_error");
  assert.equal(deniedPush.children[0].attributes["koma.approval.decision"], "deny");
});

// A task that runs the tests: one tool call, no approval.
const QUICK = [
  {
    times: "always",
    steps: [
      { do: "tool", tool: "run_tests", output: "42 passed" },
      { do: "output", text: "Done." },
    ],
  },
];
const TASK = [["koma create"], ["invoke_agent koma", [["execute_tool run_tests"]]], ["koma close"]];

/** Every span under `node` is in its trace. */
function inTrace(node, traceId = node.span.spanContext().traceId) {
  for (const c of node.children) {
    assert.equal(c.span.spanContext().traceId, traceId, `${c.name} in ${node.name}'s trace`);
    inTrace(c, traceId);
  }
}

test(
  "a client per request: the request's trace holds the client's calls, its turn and its close; the client's life is a trace linked to it",
  T,
  async (ctx) => {
    const t = tracing();
    const handle = (name) =>
      t.tracer.startActiveSpan(name, async (request) => {
        const koma = fake(ctx, QUICK, t);
        await koma.client.create({});
        await koma.client.run({ text: name }, { onApproval: "deny" });
        await koma.client.close();
        request.end();
      });
    await Promise.all([handle("request 1"), handle("request 2")]);
    const roots = t.tree();
    assert.deepEqual(roots.map((n) => n.name).sort(), ["koma.client", "koma.client", "request 1", "request 2"]);
    for (const name of ["request 1", "request 2"]) {
      const request = roots.find((n) => n.name === name);
      assert.deepEqual(shape(request.children), TASK, name);
      inTrace(request);
      // Its client: the root linked to this request, which each call and the turn link to.
      const client = roots.find((n) => n.name === "koma.client" && n.links[0] === name);
      assert.deepEqual(client.links, [name]);
      assert.notEqual(client.span.spanContext().traceId, request.span.spanContext().traceId);
      for (const call of request.children)
        assert.deepEqual(
          call.span.links.map((l) => l.context.spanId),
          [client.span.spanContext().spanId],
          `${name} > ${call.name} links to its own client's span`,
        );
    }
  },
);

test(
  "one client shared by 20 concurrent requests: 20 request traces, each with its calls and its turn; start and close where they were called",
  T,
  async (ctx) => {
    const t = tracing();
    const koma = fake(ctx, QUICK, t);
    const client = koma.client;
    await t.tracer.startActiveSpan("startup", async (span) => {
      await client.create({});
      span.end();
    });
    // A session runs one turn at a time: the requests take turns on it.
    let last = Promise.resolve();
    const exclusive = (fn) => {
      const p = last.then(fn);
      last = p.catch(() => {});
      return p;
    };
    const handle = (i) =>
      t.tracer.startActiveSpan(`request ${i}`, async (request) => {
        await client.state();
        await exclusive(() => client.run({ text: `task ${i}` }, { onApproval: "deny" }));
        request.end();
      });
    await Promise.all(Array.from({ length: 20 }, (_, i) => handle(i + 1)));
    await t.tracer.startActiveSpan("shutdown", async (span) => {
      await client.close();
      span.end();
    });
    const roots = t.tree();
    const named = (name) => roots.filter((n) => n.name === name);
    assert.equal(roots.length, 23, "startup, the client, 20 requests, shutdown: every span under one of them");
    assert.deepEqual(shape(named("startup")), [["startup", [["koma create"]]]]);
    assert.deepEqual(shape(named("shutdown")), [["shutdown", [["koma close"]]]]);
    const [life] = named("koma.client");
    assert.deepEqual(
      [life.links, life.children],
      [["startup"], []],
      "the client's life: a root of its own, linked to the span that started it",
    );
    const turns = new Set();
    for (let i = 1; i <= 20; i++) {
      const [request] = named(`request ${i}`);
      assert.deepEqual(shape(request.children), [["koma state"], ["invoke_agent koma", [["execute_tool run_tests"]]]], request.name);
      inTrace(request);
      for (const call of request.children) assert.deepEqual(call.links, ["koma.client"]);
      turns.add(request.children[1].attributes["koma.turn.id"]);
    }
    assert.equal(turns.size, 20, "20 turns, one under each request");
    const traces = new Set(roots.map((n) => n.span.spanContext().traceId));
    assert.equal(traces.size, 23, "every request a trace of its own");
    // koma got the client's context: its life's, not any request's.
    assert.equal(koma.requests()[0].env.TRACEPARENT, `00-${life.span.spanContext().traceId}-${life.span.spanContext().spanId}-01`);
  },
);

test("an approval function runs in the turn span's context, and answers as `handler`; approve() as `approve`", T, async (ctx) => {
  const t = tracing();
  const koma = fake(ctx, DEPLOY, t);
  const c = koma.client;
  await c.create({});
  let inHandler;
  await c.run(
    { text: "deploy" },
    {
      onApproval: async () => {
        await new Promise((r) => setImmediate(r));
        inHandler = api.trace.getActiveSpan()?.spanContext().spanId;
        t.tracer.startSpan("ask a person").end();
        return "allow";
      },
    },
  );
  const turn = c.turn({ text: "deploy again" });
  for await (const e of turn) if (e.name === "approval_requested") await c.approve({ approval: e.data.approval, decision: "allow" });
  await c.close();
  const [byHandler, byApprove] = t.tree().filter((n) => n.name === "invoke_agent koma");
  assert.equal(inHandler, byHandler.span.spanContext().spanId, "the handler ran in the turn's context");
  // (The application's span starts at the SDK's whole millisecond: its place among the turn's is not checked.)
  assert.deepEqual(
    shape(byHandler.children)
      .map(([n]) => n)
      .sort(),
    ["ask a person", "execute_tool git_push", "execute_tool run_tests"],
  );
  assert.equal(find([byHandler], "approval git_push").attributes["koma.approval.answered_by"], "handler");
  assert.equal(find([byApprove], "approval git_push").attributes["koma.approval.answered_by"], "approve");
  const approveCall = t.tree().find((n) => n.name === "koma approve");
  assert.ok(approveCall, "approve() has a call span of its own");
});

test("a turn that fails: koma crashes mid-turn; the turn and the client say transport_failure", T, async (ctx) => {
  const t = tracing();
  const turns = [
    {
      steps: [
        { do: "tool", tool: "run_tests", output: "ok" },
        { do: "output", text: "Oh no" },
        { do: "crash", signal: "SIGKILL" },
      ],
    },
  ];
  const koma = fake(ctx, turns, t);
  const c = koma.client;
  await c.create({});
  await assert.rejects(c.run({ text: "go" }, { onApproval: "deny" }), { code: "transport_failure" });
  await c.close();
  const turn = t.tree().find((n) => n.name === "invoke_agent koma");
  assert.equal(turn.error, "transport_failure");
  assert.equal(turn.status, api.SpanStatusCode.ERROR);
  assert.equal(turn.attributes["koma.turn.status"], "unknown");
  assert.deepEqual(shape(turn.children), [["execute_tool run_tests"]]);
  const client = t.tree().find((n) => n.name === "koma.client");
  assert.equal(client.error, "transport_failure");
  if (process.platform === "win32") {
    // Windows has no signals: a crash step of SIGKILL ends koma-sim.exe with exit code 1 (docs/koma-sim.md, "On Windows").
    assert.equal(client.attributes["koma.exit.signal"], undefined);
    assert.equal(client.attributes["process.exit.code"], 1);
  } else assert.equal(client.attributes["koma.exit.signal"], 9);
  assert.equal(typeof client.attributes["process.pid"], "number");
  const m = await t.metrics();
  assert.deepEqual(
    m["koma.client.failures"].points.map((p) => [p.attributes, p.value]),
    [[{ "error.type": "transport_failure" }, 1]],
  );
  assert.equal(m["koma.client.starts"].points[0].value, 1);
  const duration = m["gen_ai.client.operation.duration"];
  assert.equal(duration.unit, "s");
  assert.deepEqual(duration.points[0].attributes, {
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.provider.name": "koma",
    "error.type": "transport_failure",
  });
});

test("a timed-out turn: its span says timeout, and koma's interrupted status", T, async (ctx) => {
  const t = tracing();
  const koma = fake(ctx, [{ steps: [{ do: "output", text: "Thinking" }, { do: "pause" }] }], t);
  const c = koma.client;
  await c.create({});
  await assert.rejects(c.run({ text: "slow" }, { onApproval: "deny", timeout: 50 }), { code: "timeout" });
  await c.close();
  const turn = t.tree().find((n) => n.name === "invoke_agent koma");
  assert.equal(turn.error, "timeout");
  assert.equal(turn.attributes["koma.turn.status"], "interrupted");
  assert.match(turn.span.status.message, /within 50 ms/);
});

test("a method's error is its span's error.type (and a remote error's code beside it); a bad call too", T, async (ctx) => {
  const t = tracing();
  const busy = { methods: [{ method: "submit", error: { code: "busy", message: "a turn is running" } }] };
  const koma = fake(ctx, [], t, {}, busy);
  const c = koma.client;
  await c.create({});
  await assert.rejects(c.submit({ text: "x" }), { code: "remote" });
  await assert.rejects(c.approve({}), { code: "invalid_params" });
  await assert.rejects(c.request("no_such_method", {}), { code: "unsupported" });
  await c.close();
  const roots = t.tree();
  const submit = roots.find((n) => n.name === "koma submit");
  assert.equal(submit.span.kind, api.SpanKind.CLIENT);
  assert.deepEqual(submit.attributes, { "rpc.system": "koma", "rpc.method": "submit", "koma.remote.code": "busy", "error.type": "remote" });
  assert.equal(submit.status, api.SpanStatusCode.ERROR);
  assert.equal(roots.find((n) => n.name === "koma approve").error, "invalid_params");
  assert.equal(roots.find((n) => n.name === "koma no_such_method").error, "unsupported");
  assert.equal(roots.find((n) => n.name === "koma create").status, api.SpanStatusCode.UNSET);
});

test("a client that fails to start: the call and the client's span say spawn_failed, and the failure is counted", T, async () => {
  const t = tracing();
  const c = new Client({ executable: "/nonexistent/koma", tracerProvider: t.tracerProvider, meterProvider: t.meterProvider });
  await assert.rejects(c.probe(), { code: "spawn_failed" });
  await c.close();
  const roots = t.tree();
  assert.deepEqual(shape(roots), [["koma.client"], ["koma probe"], ["koma close"]]);
  const client = roots[0];
  assert.equal(client.error, "spawn_failed");
  assert.match(client.span.status.message, /nonexistent/);
  assert.equal(client.attributes["process.pid"], undefined);
  assert.equal(roots[1].error, "spawn_failed");
  const m = await t.metrics();
  assert.deepEqual(
    m["koma.client.failures"].points.map((p) => p.attributes),
    [{ "error.type": "spawn_failed" }],
  );
  assert.equal(m["koma.client.starts"], undefined, "nothing started");
});

test("koma is started with the client span's context as TRACEPARENT (and an empty TRACESTATE), its own trace; env wins", T, async (ctx) => {
  const t = tracing();
  const koma = fake(ctx, [], t);
  await t.tracer.startActiveSpan("request", async (request) => {
    await koma.client.create({});
    request.end();
  });
  await koma.client.close(); // the client's span ends
  const [first] = koma.requests();
  const client = find(t.tree(), "koma.client");
  const { traceId, spanId } = client.span.spanContext();
  assert.deepEqual(first.env, { TRACEPARENT: `00-${traceId}-${spanId}-01`, TRACESTATE: "" });
  const request = t
    .spans()
    .find((s) => s.name === "request")
    .spanContext();
  assert.notEqual(traceId, request.traceId, "the client's life is a trace of its own");
  assert.equal(client.span.parentSpanContext, undefined, "a root");
  assert.deepEqual(
    client.span.links.map((l) => [l.context.traceId, l.context.spanId]),
    [[request.traceId, request.spanId]],
    "linked to the request that started it",
  );
  assert.deepEqual(
    client.span.events.map((e) => e.name),
    ["spawned", "hello", "detach", "exit"],
    "the moments of its life",
  );

  const mine = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  const other = fake(ctx, [], t, {}, {}, { TRACEPARENT: mine });
  await other.client.create({});
  assert.deepEqual(other.requests()[0].env, { TRACEPARENT: mine });
});

test("content is recorded only when the application opts in (captureContent)", T, async (ctx) => {
  const contentKeys = ["gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"];
  const keysOf = (nodes) => nodes.flatMap((n) => [...Object.keys(n.attributes), ...keysOf(n.children)]);
  for (const captureContent of [false, true]) {
    const t = tracing();
    const koma = fake(ctx, DEPLOY, t, captureContent ? { captureContent } : {});
    await koma.client.create({});
    await koma.client.run({ text: "deploy secrets" }, { onApproval: "allow" });
    const turn = t.tree().find((n) => n.name === "invoke_agent koma");
    const found = keysOf([turn]).filter((k) => contentKeys.includes(k));
    if (!captureContent) {
      assert.deepEqual(found, []);
      assert.ok(!JSON.stringify(t.spans().map((s) => s.attributes)).includes("secrets"));
      continue;
    }
    assert.deepEqual(new Set(found), new Set(contentKeys));
    assert.deepEqual(JSON.parse(turn.attributes["gen_ai.input.messages"]), [
      { role: "user", parts: [{ type: "text", content: "deploy secrets" }] },
    ]);
    assert.deepEqual(JSON.parse(turn.attributes["gen_ai.output.messages"]), [
      { role: "assistant", parts: [{ type: "text", content: "Testing. Deployed." }], finish_reason: "completed" },
    ]);
    const tests = find([turn], "execute_tool run_tests");
    assert.equal(tests.attributes["gen_ai.tool.call.arguments"], '{"suite":"all"}');
    assert.equal(tests.attributes["gen_ai.tool.call.result"], '"42 passed"');
  }
});

test("metrics: turn duration, tool calls by tool and outcome, approval wait, client starts", T, async (ctx) => {
  const t = tracing();
  const koma = fake(ctx, DEPLOY, t);
  await koma.client.create({});
  await koma.client.run({ text: "deploy" }, { onApproval: "allow" });
  await koma.client.run({ text: "deploy" }, { onApproval: "deny" });
  const m = await t.metrics();
  const duration = m["gen_ai.client.operation.duration"].points;
  assert.deepEqual(
    duration.map((p) => [p.attributes["error.type"], p.value.count]).sort(),
    [
      [undefined, 1],
      ["turn_failed", 1],
    ],
    "a failed turn's duration has its error.type",
  );
  const calls = m["koma.tool.calls"];
  assert.equal(calls.unit, "{call}");
  const count = (tool, outcome) =>
    calls.points.find((p) => p.attributes["gen_ai.tool.name"] === tool && p.attributes["koma.tool.outcome"] === outcome)?.value;
  assert.deepEqual([count("run_tests", "ok"), count("git_push", "ok"), count("git_push", "denied")], [2, 1, 1]);
  const waits = m["koma.approval.duration"].points.map((p) => [
    p.attributes["koma.approval.decision"],
    p.attributes["koma.approval.answered_by"],
    p.value.count,
  ]);
  assert.deepEqual(waits.sort(), [
    ["allow", "policy", 1],
    ["deny", "policy", 1],
  ]);
  assert.equal(m["koma.client.starts"].points[0].value, 1);
});

test("telemetry: false, and a client with no provider given or registered, record nothing", T, async (ctx) => {
  const t = tracing();
  const off = fake(ctx, DEPLOY, t, { telemetry: false });
  await off.client.create({});
  await off.client.run({ text: "deploy" }, { onApproval: "allow" });
  assert.deepEqual(t.spans(), []);
  assert.equal(off.requests()[0].env, undefined, "no TRACEPARENT");
  assert.deepEqual(await t.metrics(), {});

  // A process that loads the API but registers no provider: the package
  // does not even load the API itself, and koma gets no context.
  const script = `
    const { Client } = require(${JSON.stringify(join(root, "index.js"))});
    (async () => {
      const c = new Client({ executable: ${JSON.stringify(SIM)}, env: { KOMA_SIM_HOME: ${JSON.stringify(tempHome())} } });
      await c.create({});
      const r = await c.run({ text: "fix notes.txt" }, { onApproval: "allow" });
      await c.close();
      const loaded = Object.keys(require.cache).filter((f) => f.includes("@opentelemetry"));
      console.log(JSON.stringify({ status: r.status, loaded }));
    })();`;
  const r = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", cwd: root });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { status: "completed", loaded: [] });
});

test("bad telemetry options are invalid_params, naming the option", () => {
  const bad = [
    [{ telemetry: "yes" }, /`telemetry` must be a boolean/],
    [{ captureContent: 1 }, /`captureContent` must be a boolean/],
    [{ tracerProvider: {} }, /`tracerProvider` must be an OpenTelemetry TracerProvider/],
    [{ meterProvider: 5 }, /`meterProvider` must be an OpenTelemetry MeterProvider/],
  ];
  for (const [options, message] of bad)
    assert.throws(() => new Client({ executable: SIM, ...options }), { code: "invalid_params", message });
});

test("the picture of docs/tracing.md is drawn from exported spans: a row per span, under its parent", T, async () => {
  const rows = (await picture()).split("\n");
  assert.deepEqual(
    rows.map((r) => r.split("|")[0].trimEnd()),
    [
      "POST /deploy",
      "  koma create",
      "  invoke_agent koma",
      "    execute_tool run_tests",
      "    execute_tool git_push",
      "      approval git_push",
      "  koma close",
      "koma.client",
    ],
  );
  assert.match(rows[5], /\| +\d+\.\d ms  koma\.approval\.decision=allow koma\.approval\.answered_by=handler$/);
  assert.match(rows[7], /\| +\d+\.\d ms  process\.exit\.code=0 link: POST \/deploy$/);
});

test("examples/tracing.mjs prints its request's trace with koma's spans in it (the console exporter), and the metrics", T, () => {
  const r = spawnSync(process.execPath, ["examples/tracing.mjs"], { cwd: root, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  for (const name of [
    "handle request",
    "koma.client",
    "koma create",
    "invoke_agent koma",
    "execute_tool write_file",
    "approval write_file",
  ])
    assert.ok(r.stdout.includes(`name: '${name}'`), `${name} in ${r.stdout}`);
  assert.match(r.stdout, /^turn t-1: completed$/m);
  for (const name of ["gen_ai.client.operation.duration", "koma.tool.calls", "koma.approval.duration", "koma.client.starts"])
    assert.ok(r.stdout.includes(`name: '${name}'`), `the metric ${name} in ${r.stdout}`);
});
