// The shared counters as an interface: lib/stream.js's Cursor passes the
// cases of testdata/counting.json, which python/koma_sdk/_stream.py's Cursor
// passes too (docs/python-internals.md, "The shared counters"). The layout
// is the core's, from the addon.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { Cursor } = require("../lib/stream.js");
const { __counterLayout } = require("../binding.js");

const { cases } = JSON.parse(readFileSync(new URL("../testdata/counting.json", import.meta.url), "utf8"));
const layout = __counterLayout();

/** What the core does around a Cursor: lends batches (writing their epoch and counting), bumps the epoch. */
function core() {
  const slots = Math.max(...Object.entries(layout).flatMap(([k, v]) => (k === "STRIDE" ? [] : [v]))) + 1;
  const buffer = new ArrayBuffer(4 * slots);
  const shared = new Uint32Array(buffer);
  const lent = [];
  let seq = 0;
  return {
    buffer,
    shared,
    lend(sizes, counting) {
      const batch = sizes.flatMap((size) => [++seq, "output", { turn: "t-1", text: "x" }, size]);
      lent.push({ batch, counting });
    },
    pull() {
      const next = lent.shift();
      if (next === undefined) return undefined;
      shared[layout.BATCH_EPOCH] = shared[layout.EPOCH];
      shared[layout.BATCH_COUNTING] = next.counting;
      return next.batch;
    },
  };
}

test("every slot the cases name is the core's", () => {
  for (const name of ["EPOCH", "BATCH_EPOCH", "BATCH_COUNTING", "TAKEN", "TAKEN_BYTES", "STRIDE"]) {
    assert.equal(typeof layout[name], "number", name);
  }
  for (const { steps } of cases) {
    for (const step of steps) for (const name of Object.keys({ ...step.counters, ...step.set })) assert.ok(name in layout, name);
  }
});

for (const { name, steps } of cases) {
  test(`the cursor counts as specified: ${name}`, () => {
    const c = core();
    const cursor = new Cursor(() => c.pull(), c.buffer, layout);
    for (const step of steps) {
      if ("lend" in step) c.lend(step.lend, step.counting);
      else if ("take" in step) {
        const got = [];
        for (let i = 0; i < step.take; i++) {
          const item = cursor.next();
          if (item?.type === "event") got.push(item.seq);
        }
        assert.deepEqual(got, step.got, JSON.stringify(step));
      } else if ("overflow" in step) c.shared[layout.EPOCH] += 1;
      else if ("release" in step) cursor.release();
      else if ("set" in step) for (const [slot, value] of Object.entries(step.set)) c.shared[layout[slot]] = value;
      else {
        const held = Object.fromEntries(Object.keys(step.counters).map((slot) => [slot, c.shared[layout[slot]]]));
        assert.deepEqual(held, step.counters, JSON.stringify(step));
      }
    }
  });
}
