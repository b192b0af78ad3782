// Preloaded (`--expose-gc --require`) into some runs of scripts/test-runtimes.mjs's
// exit suite: a full garbage collection as the process exits, after its last
// test. Work left then for a FinalizationRegistry made Node 20 before 20.12
// spin forever at exit (docs/platforms.md); here that moment happens every
// time, not only when the collector happens to run late.
"use strict";
process.on("exit", () => {
  if (typeof globalThis.gc !== "function") throw new Error("gc-at-exit.cjs needs --expose-gc");
  globalThis.gc();
});
