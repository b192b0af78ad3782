// A tour of @koma/sdk on koma-sim, the stand-in for koma that comes with it:
// probe, create, a turn with a tool approval (client.turn with onApproval),
// a turn in one call (client.run), enqueue + interrupt, the events no Turn
// took (client.events), detach, and resume in a new client.
//   node demo.mjs      (in a checkout of the repository: `npm run demo`)
// Sessions go to a fresh temporary folder; KOMA_SIM_DELAY_MS sets the pace.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@koma/sdk";
import { simPath } from "@koma/sdk/sim";

const env = { KOMA_SIM_HOME: mkdtempSync(join(tmpdir(), "koma-demo-")), KOMA_SIM_DELAY_MS: process.env.KOMA_SIM_DELAY_MS ?? "60" };
const say = (line) => process.stdout.write(`${line}\n`);

const client = new Client({ executable: simPath, env });
const hello = await client.probe();
say(`== hello: ${hello.binary.path} ${hello.binary.version}, protocol ${hello.protocol}`);
say(`   capabilities: ${hello.capabilities.join(", ")}`);

const { session } = await client.create({ cwd: process.cwd() });
say(`== session ${session} created`);

// events() gets what no Turn takes (the diagnostic after create, the idle
// states between turns, the turns of queued texts): read it in the background.
let lastSeq = 0;
const waiters = [];
const seen = [];
const pump = (async () => {
  for await (const item of client.events()) {
    if (item.type === "overflow") {
      say(`   (overflow: ${item.dropped} events dropped)`);
      continue;
    }
    lastSeq = Math.max(lastSeq, item.seq);
    seen.push(item);
    show(item, "events()");
    for (const w of waiters.splice(0))
      if (!w.match(item)) waiters.push(w);
      else w.resolve(item);
  }
})();
// The first event (seen already, or still to come) that matches.
const next = (match) =>
  new Promise((resolve) => {
    const found = seen.find(match);
    if (found) resolve(found);
    else waiters.push({ match, resolve });
  });

let streaming = false;
function show(e, via = "turn") {
  if (e.type === "overflow") return say(`   (overflow: ${e.dropped} events dropped)`);
  lastSeq = Math.max(lastSeq, e.seq);
  if (e.name === "output") {
    if (!streaming) process.stdout.write(`   koma (${via})> `);
    streaming = true;
    process.stdout.write(e.data.text);
    return;
  }
  if (streaming) process.stdout.write("\n");
  streaming = false;
  switch (e.name) {
    case "turn_started":
      return say(`-- turn ${e.data.turn} started: "${e.data.text}"`);
    case "tool_call":
      return say(`   tool call ${e.data.call}: ${e.data.tool} ${JSON.stringify(e.data.input)}`);
    case "tool_result":
      return say(`   tool result ${e.data.call}: ${e.data.error ? "failed" : "ok"}`);
    case "approval_requested":
      return say(`   approval ${e.data.approval} requested for ${e.data.tool} ${JSON.stringify(e.data.input)}`);
    case "turn_finished":
      return say(`-- turn ${e.data.turn} ${e.data.status}`);
    case "state":
      return say(`   state: ${e.data.status}${e.data.queued ? `, ${e.data.queued} queued` : ""}`);
    case "diagnostic":
      return say(`   [${e.data.level}] ${e.data.message}`);
  }
}

// A Turn: its own events, its approvals answered by onApproval.
const first = client.turn(
  { text: "read the README and fix the typo" },
  {
    onApproval: (request) => {
      say(`== answering ${request.approval} (${request.tool}): allow`);
      return "allow";
    },
  },
);
for await (const item of first) show(item);
const r1 = await first.result;
say(`== ${r1.turn}: ${r1.status}; tools: ${r1.toolCalls.map((c) => `${c.tool}${c.approval ? ` (${c.approval})` : ""}`).join(", ")}`);

// A turn in one call.
const r2 = await client.run({ text: "look at package.json" }, { onApproval: "deny" });
say(`== run(): ${r2.turn} ${r2.status}, ${r2.output.length} characters of output, ${r2.events} events`);

// A queued text, and interrupting the turn ahead of it.
const second = client.turn({ text: "explain the build in detail" }, { onApproval: "deny" });
const secondId = await second.id;
const { position } = await client.enqueue({ text: "show the diff" });
say(`== queued "show the diff" at position ${position}; interrupting ${secondId} at its first output`);
for await (const item of second) {
  show(item);
  if (item.type === "event" && item.name === "output") await second.interrupt();
}
say(`== ${secondId}: ${(await second.result).status}`);
// The queued text runs as a turn nobody opened: events() gets it.
const queuedTurn = await next((e) => e.name === "turn_started" && e.data.text === "show the diff");
await next((e) => e.name === "turn_finished" && e.data.turn === queuedTurn.data.turn);

const before = lastSeq;
await client.detach();
await pump;
say(`== detached after event ${before}; the child exited`);

const again = new Client({ executable: simPath, env });
const resumed = await again.resume({ session, after: 0 });
let replayed = 0;
for await (const item of again.events()) {
  if (item.type === "event") replayed++;
  if (item.type === "event" && item.seq === before) break;
}
say(`== resumed ${resumed.session} in a new process: ${replayed} events came back (seq 1..${before}), state ${resumed.state.status}`);
await again.close();
say("== done");
