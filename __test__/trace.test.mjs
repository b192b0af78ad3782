// Seeing what happens: the `koma-sdk:trace` diagnostics channel (frames both
// ways, koma's stderr lines, the notes of a client's life, each naming its
// client), what reaches process.stderr, and util.inspect(client). Through
// real koma-sim children.
import { test } from "node:test";
import assert from "node:assert/strict";
import diagnostics_channel from "node:diagnostics_channel";
import { inspect } from "node:util";
import { createRequire } from "node:module";
import { Client, SIM, root, runScript, simClient, tempHome } from "./helpers.mjs";

const { fakeKoma } = createRequire(import.meta.url)("../testing.js");

const CHANNEL = "koma-sdk:trace";
const INDEX = JSON.stringify(`${root}/index.js`);

/** Subscribe for the test's length; the messages of `client()` only. */
function listen(t, client) {
  const seen = [];
  const on = (m) => {
    if (m.client === client()) seen.push(m);
  };
  diagnostics_channel.subscribe(CHANNEL, on);
  t.after(() => diagnostics_channel.unsubscribe(CHANNEL, on));
  return seen;
}

test("the trace channel carries the frames, stderr lines and notes of a client, naming it", { timeout: 30000 }, async (t) => {
  let client;
  const seen = listen(t, () => client);
  client = simClient(t); // made while the channel has a subscriber
  const created = await client.create({});
  await client.state();
  const pid = client.pid;
  await client.close(); // every record is handed over by the time close resolves
  assert.ok(seen.length > 0);
  for (const m of seen) {
    assert.deepEqual(Object.keys(m), ["client", "pid", "kind", "direction", "text"]);
    assert.equal(m.pid, pid, `${m.kind} names koma's pid`);
    assert.equal(m.direction === null, m.kind !== "frame");
  }
  const frames = seen.filter((m) => m.kind === "frame");
  assert.equal(frames[0].direction, "read");
  assert.match(frames[0].text, /^\{"type":"hello","protocol":1,/);
  const i = frames.findIndex((m) => m.direction === "written" && /"method":"state"/.test(m.text));
  assert.ok(i > 0, "the request written");
  const id = /"id":"(\d+)"/.exec(frames[i].text)[1];
  const answer = frames.findIndex((m) => m.direction === "read" && m.text.startsWith(`{"id":"${id}","result":`));
  assert.ok(answer > i, "its answer read, after it");
  const stderr = seen.filter((m) => m.kind === "stderr").map((m) => m.text);
  assert.ok(stderr.includes(`koma-sim: session ${created.session} created`), JSON.stringify(stderr));
  const notes = seen.filter((m) => !["frame", "stderr"].includes(m.kind)).map((m) => [m.kind, m.text]);
  assert.deepEqual(notes, [
    ["spawned", `koma started, pid ${pid}`],
    ["hello", "hello checked, koma 0.1.0"],
    ["detach", "detach written by close()"],
    ["exit", "koma exited with code 0"],
    ["closed", "closed"],
  ]);
});

test("a failure is a note on the channel, with the error", { timeout: 30000 }, async (t) => {
  let client;
  const seen = listen(t, () => client);
  // `hold` keeps koma-sim from answering; koma-sim.exe refuses it (Windows has no SIGUSR1 to release it by).
  client = simClient(t, { faults: process.platform === "win32" ? "never_answer" : "hold" });
  await client.probe();
  const pid = client.pid;
  process.kill(pid, "SIGKILL");
  await client.state().catch(() => {});
  await client.close();
  const failed = seen.filter((m) => m.kind === "failed");
  assert.equal(failed.length, 1);
  assert.match(failed[0].text, /^failed: transport_failure: /);
  assert.doesNotMatch(failed[0].text, /\n/, "one line: koma wrote nothing on its stderr");
  // Windows has no signals: Node's kill() there is TerminateProcess with exit code 1.
  const exit = process.platform === "win32" ? "koma exited with code 1" : "koma was killed by signal 9 (SIGKILL)";
  assert.ok(
    seen.some((m) => m.kind === "exit" && m.text === exit),
    JSON.stringify(seen.filter((m) => m.kind === "exit")),
  );
});

test("a failure's note keeps koma's last lines of stderr as lines", { timeout: 30000 }, async (t) => {
  let client;
  const seen = listen(t, () => client);
  client = simClient(t, { faults: "exit_mid_request" });
  await client.state().catch(() => {});
  await client.close();
  const failed = seen.filter((m) => m.kind === "failed");
  assert.equal(failed.length, 1);
  const [first, ...tail] = failed[0].text.split("\n");
  assert.match(first, /^failed: transport_failure: koma exited with code 3 .*; last lines of stderr:$/, failed[0].text);
  assert.ok(tail.includes("koma-sim: exiting on purpose (exit_mid_request)"), failed[0].text);
  assert.doesNotMatch(failed[0].text, /\\n/, "no literal \\n");
});

test("a subscriber that comes after a client was made gets its trace from the client's next call on", { timeout: 30000 }, async (t) => {
  const client = simClient(t);
  const created = await client.create({}); // nobody listens: nothing is kept
  const seen = listen(t, () => client);
  await client.state();
  await client.close();
  const frames = seen.filter((m) => m.kind === "frame");
  const i = frames.findIndex((m) => m.direction === "written" && /"method":"state"/.test(m.text));
  assert.ok(i >= 0, "the next call's request");
  const id = /"id":"(\d+)"/.exec(frames[i].text)[1];
  assert.ok(
    frames.slice(i).some((m) => m.direction === "read" && m.text.startsWith(`{"id":"${id}","result":`)),
    "and its answer",
  );
  // Nothing of the create before (a stderr line of koma's that the client
  // reads after the subscriber came is what it sees then, and may come).
  assert.ok(!frames.some((m) => m.text.includes('"method":"create"') || m.text.includes(`"session":"${created.session}","state"`)));
  assert.deepEqual(
    seen.filter((m) => !["frame", "stderr"].includes(m.kind)).map((m) => m.kind),
    ["detach", "exit", "closed"],
  );
});

test("a subscriber that comes in the middle of a turn gets the client's trace from its next wake on", { timeout: 30000 }, async (t) => {
  // Two approvals: the subscriber comes while the first is asked; the second
  // is asked in a later wake, and the turn ends only once it is answered. So
  // turn_finished is read after a wake that came after the subscriber, with
  // no call of the client's since.
  const ask = (tool) => ({ do: "approval", tool, allow: { output: "ok" } });
  const koma = fakeKoma(
    t,
    { turns: [{ match: { contains: "twice" }, steps: [ask("a"), ask("b"), { do: "output", text: "done" }] }] },
    { executable: SIM },
  );
  const client = koma.newClient();
  t.after(() => client.close());
  await client.create({});
  let seen;
  const result = await client.run(
    { text: "twice" },
    {
      onApproval: () => {
        seen ??= listen(t, () => client);
        return "allow";
      },
    },
  );
  assert.equal(result.status, "completed");
  const read = seen.filter((m) => m.kind === "frame" && m.direction === "read").map((m) => m.text);
  assert.ok(
    read.some((text) => /"name":"turn_finished"/.test(text)),
    JSON.stringify(read),
  );
  assert.ok(!read.some((text) => /"name":"turn_started"/.test(text)), "nothing read before the subscriber came");
});

test("nothing of the trace reaches process.stderr; trace: true writes to fd 2 from native code", { timeout: 60000 }, () => {
  const script = (options) => `
    const { Client } = require(${INDEX});
    const captured = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = (chunk, ...rest) => (captured.push(String(chunk)), true);
    const c = new Client({ executable: ${JSON.stringify(SIM)}, env: ${JSON.stringify({ KOMA_SIM_HOME: tempHome(), KOMA_SIM_DELAY_MS: "0" })}${options} });
    c.create({}).then(() => c.state()).then(() => c.close()).then(() => {
      process.stderr.write = write;
      console.log(JSON.stringify({ captured, pid: c.pid }));
    });
  `;
  const quiet = runScript(script(""), { env: { KOMA_SDK_TRACE: "" } });
  assert.equal(quiet.code, 0, quiet.err);
  assert.deepEqual(JSON.parse(quiet.out).captured, []);
  assert.equal(quiet.err, "", "nothing on fd 2");
  const traced = runScript(script(", trace: true"), { env: { KOMA_SDK_TRACE: "" } });
  assert.equal(traced.code, 0, traced.err);
  assert.deepEqual(JSON.parse(traced.out).captured, [], "not through process.stderr");
  assert.match(traced.err, /^\[koma-sdk pid (\d+)\] koma started, pid \1$/m);
  assert.match(traced.err, /^\[koma-sdk pid \d+\] -> \{"id":"\d+","method":"state","params":\{\}\}$/m);
});

test("util.inspect(client) shows its pid and phase", { timeout: 30000 }, async (t) => {
  const client = simClient(t);
  assert.equal(inspect(client), "Client { pid: null, phase: 'not_started' }");
  await client.create({});
  assert.equal(inspect(client), `Client { pid: ${client.pid}, phase: 'ready' }`);
  await client.close();
  assert.equal(inspect(client), "Client { pid: null, phase: 'closed' }");
  assert.equal(inspect({ client: new Client({ executable: SIM }) }), "{ client: Client { pid: null, phase: 'not_started' } }");
  assert.match(inspect(Client.prototype), /^\{\n {2}close: \[(Async)?Function: close\],/, "the prototype is inspected as usual");
});
