// Long strings (4 KiB and more) are cut out of frames on the I/O thread and
// handed to JavaScript ready-made; what the application gets must be exactly
// what JSON.parse gives, whatever the string holds and wherever it sits.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { Client, eventsError, rejection, root } from "./helpers.mjs";
import { PEER, checkLongStrings } from "./long-strings-check.mjs";
import { CASES } from "./peers/long-strings-cases.mjs";

test("long strings in results and events are exactly what JSON.parse gives (external strings)", async () => {
  assert.equal(await checkLongStrings(), CASES.length);
});

test("the same without external strings (the copying path of older Node versions)", () => {
  const out = execFileSync(process.execPath, [join(root, "__test__", "long-strings-check.mjs")], {
    env: { ...process.env, KOMA_SDK_NO_EXTERNAL_STRINGS: "1" },
    encoding: "utf8",
  });
  assert.equal(out.trim(), `ok ${CASES.length}`);
});

test("a long remote error message and a long string outside data are kept and dropped as before", async (t) => {
  const client = new Client({ executable: PEER });
  t.after(() => client.close());
  const e = await rejection(client.request("fail"));
  assert.equal(e.code, "remote");
  assert.equal(e.remote.code, "busy");
  assert.equal(e.remote.message, "m".repeat(6000));
  const answer = client.request("stray");
  for await (const ev of client.events()) {
    assert.deepStrictEqual(ev, { type: "event", seq: 1, name: "output", data: { turn: "t1", text: "hi" } });
    break;
  }
  assert.deepStrictEqual(await answer, {});
});

test("a control character inside a long string is still a protocol error", async (t) => {
  const client = new Client({ executable: PEER });
  t.after(() => client.close());
  const e = await rejection(client.request("broken"));
  assert.equal(e.code, "delivery_unknown");
  const fatal = await eventsError(client);
  assert.equal(fatal?.code, "protocol_error");
  assert.match(fatal.message, /control character/);
});
