// Drive the hostile peer without taking events, until it breaks the frame
// bound; print the peak RSS growth of this process, in bytes, as JSON.
const { join } = require("node:path");
const { Client } = require("../../index.js");
const { peerCommand } = require("./command.cjs");

void (async () => {
  const base = process.resourceUsage().maxRSS * 1024;
  const client = new Client({ executable: peerCommand(join(__dirname, "hostile.mjs")) });
  await client.probe();
  const it = client.events();
  let error;
  try {
    await client.state(); // written; the peer never answers: delivery_unknown at the end
  } catch (e) {
    error = e.code;
  }
  let first;
  try {
    first = (await it.next()).value;
    for (;;) if ((await it.next()).done) break;
  } catch (e) {
    error += `,${e.code}`;
  }
  await client.close();
  const peak = process.resourceUsage().maxRSS * 1024 - base;
  console.log(JSON.stringify({ peak, error, first: first && first.type, stderr: client.stderr.length }));
})();
