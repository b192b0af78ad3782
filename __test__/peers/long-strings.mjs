#!/usr/bin/env node
// A peer that answers with long strings (see long-strings-cases.mjs):
//   cases       → the result is an array of every case's value
//   case {i}    → the result is case i's value itself
//   emit        → one tool_result event per case (output: the case), then {count}
//   fail        → a remote error whose message is 6,000 bytes
//   broken      → an event whose long string holds a raw control character
//   stray       → an event with a long string outside `data` (a field the client drops)
//   blobpad {blob, pad} → {blob: "b" × blob, pad: "p" × pad}
import { CASES, eventLine } from "./long-strings-cases.mjs";

const caps = [
  "create",
  "resume",
  "state",
  "submit",
  "enqueue",
  "interrupt",
  "interrupt_and_submit",
  "approve",
  "detach",
  "configure",
  "cases",
  "case",
  "emit",
  "fail",
  "stray",
  "broken",
  "blobpad",
];
const out = (line) => process.stdout.write(line + "\n");
out(JSON.stringify({ type: "hello", protocol: 1, binary: { path: "long-strings", version: "0" }, diagnostics: [], capabilities: caps }));

let seq = 0;
let buffered = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffered += chunk;
  let nl;
  while ((nl = buffered.indexOf("\n")) >= 0) {
    const req = JSON.parse(buffered.slice(0, nl));
    buffered = buffered.slice(nl + 1);
    const id = JSON.stringify(req.id);
    switch (req.method) {
      case "cases":
        out(`{"id":${id},"result":[${CASES.map((c) => c[1]).join(",")}]}`);
        break;
      case "case":
        out(`{"id":${id},"result":${CASES[req.params.i][1]}}`);
        break;
      case "emit":
        // Several events per write: their strings share one batch.
        process.stdout.write(CASES.map((_, i) => eventLine(++seq, i) + "\n").join(""));
        out(`{"id":${id},"result":{"count":${CASES.length}}}`);
        break;
      case "blobpad":
        // A short long string beside a much longer one, in one result.
        out(`{"id":${id},"result":{"blob":"${"b".repeat(req.params.blob)}","pad":"${"p".repeat(req.params.pad)}"}}`);
        break;
      case "fail":
        out(`{"id":${id},"error":{"code":"busy","message":${JSON.stringify("m".repeat(6000))}}}`);
        break;
      case "stray":
        out(`{"type":"event","seq":${++seq},"name":"output","extra":${JSON.stringify("q".repeat(6000))},"data":{"turn":"t1","text":"hi"}}`);
        out(`{"id":${id},"result":{}}`);
        break;
      case "broken":
        out(`{"type":"event","seq":${++seq},"name":"output","data":{"turn":"t1","text":"${"v".repeat(3000)}\u0007${"v".repeat(3000)}"}}`);
        break;
      case "detach":
        out(`{"id":${id},"result":{}}`);
        process.exit(0);
        break;
      default:
        out(`{"id":${id},"error":{"code":"unknown_method","message":"no"}}`);
    }
  }
});
process.stdin.on("end", () => process.exit(0));
