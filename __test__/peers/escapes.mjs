#!/usr/bin/env node
// A peer whose stderr and stdout carry terminal escape sequences: a valid
// hello, then, on the first request, an escape-laden line that breaks the protocol.
const caps = ["create", "resume", "state", "submit", "enqueue", "interrupt", "interrupt_and_submit", "approve", "detach", "configure"];
process.stdout.write(
  JSON.stringify({ type: "hello", protocol: 1, binary: { path: "escapes", version: "0" }, diagnostics: [], capabilities: caps }) + "\n",
);
process.stderr.write("warning \x1b]0;pwned\x07 \x1b[2J\x1b[31mred\n");
process.stdin.once("data", () => {
  process.stdout.write("\x1b[31mINFO\x1b[0m " + "z".repeat(5000) + "\x1b[2J\n");
});
process.stdin.on("end", () => process.exit(0));
