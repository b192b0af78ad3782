// The long-strings check, shared by long-strings.test.mjs: in its own process
// too, with KOMA_SDK_NO_EXTERNAL_STRINGS=1 (the copying path that Node
// versions without external strings take). Run alone, it prints "ok".
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import { Client, peer } from "./helpers.mjs";
import { CASES } from "./peers/long-strings-cases.mjs";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc");

export const PEER = peer("long-strings.mjs");

/** Every case through a result, a result per case, and events: equal to JSON.parse of the same text. */
export async function checkLongStrings() {
  const client = new Client({ executable: PEER });
  try {
    const expected = () => CASES.map(([, text]) => JSON.parse(text));
    const all = await client.request("cases");
    assert.deepStrictEqual(all, expected(), "one result holding every case");
    const each = [];
    for (let i = 0; i < CASES.length; i++) {
      each.push(await client.request("case", { i }));
      assert.deepStrictEqual(each[i], expected()[i], `result: ${CASES[i][0]}`);
    }
    const proto = each[CASES.findIndex(([name]) => name.includes("__proto__"))];
    assert.equal(Object.getPrototypeOf(proto), Object.prototype, "the prototype is untouched");
    assert.ok(Object.hasOwn(proto, "__proto__"), "__proto__ is an own property, as JSON.parse makes it");

    const answer = client.request("emit");
    const events = [];
    for await (const e of client.events()) {
      events.push(e);
      if (events.length === CASES.length) break;
    }
    assert.deepStrictEqual(await answer, { count: CASES.length });
    for (const [i, e] of events.entries()) {
      assert.equal(e.name, "tool_result");
      assert.deepStrictEqual(e.data, { turn: "t1", call: `c${i}`, output: expected()[i], error: false }, `event: ${CASES[i][0]}`);
    }
    // The strings stay intact once the addon has let go of them and the heap moved.
    gc();
    gc();
    assert.deepStrictEqual(all, expected(), "after gc: the result");
    assert.deepStrictEqual(
      events.map((e) => e.data.output),
      expected(),
      "after gc: the events",
    );
    return CASES.length;
  } finally {
    await client.close();
  }
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split(/[\\/]/).pop())) {
  const n = await checkLongStrings();
  console.log(`ok ${n}`);
}
