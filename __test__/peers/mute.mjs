#!/usr/bin/env node
// A mute peer: reads stdin to its end and never writes; stdout stays open meanwhile.
process.stdin.resume();
