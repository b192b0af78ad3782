// `@koma/sdk/testing`: a fake Koma that a test scripts. koma-sim plays a
// scenario (what each turn does, how requests are answered) as a real child
// through the real transport, and records what the program sent:
//
//   const { fakeKoma, step } = require("@koma/sdk/testing");
//   const koma = fakeKoma(t, { turns: [{ steps: [step.output("hi")] }] });
//   await koma.client.create({});
//
// docs/testing.md is the guide; lib/testing.js and lib/scenario.js the code.
"use strict";

module.exports = require("./lib/testing.js");
