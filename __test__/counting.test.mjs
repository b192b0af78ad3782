// The shared counters as an interface: lib/stream.js's Cursor passes the
// cases of testdata/counting.json against the core's own side of the
// counters (the addon's __countingRig(): the core's counters, bound and epoch,
// its batches lent as a client lends them), as python/koma_sdk/_stream.py's
// Cursor and the core's own cursor (crates/koma-transport/tests/counting.rs)
// do (docs/python-internals.md, "The shared counters"). The layout, slots
// and ways of counting alike, is the core's, from the addon.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { Cursor } = require("../lib/stream.js");
const { __counterLayout, __countingRig } = require("../binding.js");

const { cases } = JSON.parse(readFileSync(new URL("../testdata/counting.json", import.meta.url), "utf8"));
const layout = __counterLayout();

test("every slot and way of counting the cases name is the core's", () => {
  for (const name of ["EPOCH", "BATCH_EPOCH", "BATCH_COUNTING", "TAKEN", "TAKEN_BYTES", "STRIDE", "UNCOUNTED", "REVOCABLE", "KEPT"]) {
    assert.equal(typeof layout[name], "number", name);
  }
  const ways = new Set();
  for (const { steps } of cases) {
    for (const step of steps) {
      for (const name of Object.keys({ ...step.counters, ...step.set })) assert.ok(name in layout, name);
      if ("lend" in step) ways.add(step.counting);
    }
  }
  assert.deepEqual([...ways].sort(), [layout.UNCOUNTED, layout.REVOCABLE, layout.KEPT].sort());
});

for (const { name, steps } of cases) {
  test(`the cursor counts as specified: ${name}`, () => {
    const rig = __countingRig();
    const buffer = rig.counters;
    const shared = new Uint32Array(buffer);
    const cursor = new Cursor(
      () => {
        const json = rig.pull();
        return json == null ? undefined : JSON.parse(json);
      },
      buffer,
      layout,
    );
    for (const step of steps) {
      if ("lend" in step) rig.lend(step.lend, step.counting);
      else if ("take" in step) {
        const got = [];
        for (let i = 0; i < step.take; i++) {
          const item = cursor.next();
          if (item?.type === "event") got.push(item.seq);
        }
        assert.deepEqual(got, step.got, JSON.stringify(step));
      } else if ("overflow" in step) rig.overflow();
      else if ("release" in step) cursor.release();
      else if ("set" in step) for (const [slot, value] of Object.entries(step.set)) shared[layout[slot]] = value;
      else {
        const held = Object.fromEntries(Object.keys(step.counters).map((slot) => [slot, shared[layout[slot]]]));
        assert.deepEqual(held, step.counters, JSON.stringify(step));
      }
    }
  });
}
