#!/usr/bin/env node
// A hostile peer: a valid hello, then as fast as it can: 1 MiB events that
// nobody takes, a flood of stderr, and finally a line that never ends.
// Used to check that the client's memory stays within the protocol's bounds.
import { once } from "node:events";

const write = async (stream, data) => {
  if (!stream.write(data)) await once(stream, "drain");
};
const caps = ["create", "resume", "state", "submit", "enqueue", "interrupt", "interrupt_and_submit", "approve", "detach", "configure"];
await write(
  process.stdout,
  JSON.stringify({ type: "hello", protocol: 1, binary: { path: "hostile", version: "0" }, diagnostics: [], capabilities: caps }) + "\n",
);
const text = "x".repeat(1 << 20);
const eventsMiB = Number(process.env.HOSTILE_EVENTS_MIB ?? 400);
const noise = "noise ".repeat(10000) + "\n";
for (let seq = 1; seq <= eventsMiB; seq++) {
  await write(process.stdout, `{"type":"event","seq":${seq},"name":"output","data":{"turn":"t","text":"${text}"}}\n`);
  await write(process.stderr, noise);
}
// A frame that never ends: the client must give up at 40 MiB.
const chunk = "y".repeat(1 << 20);
await write(process.stdout, '{"id":"1","result":"');
for (let i = 0; i < 48; i++) await write(process.stdout, chunk);
await new Promise(() => {}); // and never exit by itself
