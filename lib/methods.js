// Generated from surface/protocol.json by scripts/surface.mjs: do not edit.
// The protocol's methods of a Client: [JavaScript name, wire name, whether it takes params].
"use strict";

module.exports = [
  ["create", "create", true],
  ["resume", "resume", true],
  ["state", "state", false],
  ["submit", "submit", true],
  ["enqueue", "enqueue", true],
  ["interrupt", "interrupt", false],
  ["interruptAndSubmit", "interrupt_and_submit", true],
  ["approve", "approve", true],
  ["configure", "configure", true],
  ["detach", "detach", false],
];
