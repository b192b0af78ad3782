// Debian's redis-server, started for a test or a benchmark on a port of the loopback
// address that is free, with nothing saved, and stopped.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

async function freePort() {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = /** @type {import("node:net").AddressInfo} */ (server.address());
  server.close();
  await once(server, "close");
  return port;
}

/**
 * A running redis-server: `{url, port, child, stop()}`. A port taken between
 * the look and the start is tried again with another.
 */
export async function startRedis({ tries = 5 } = {}) {
  for (let i = 1; ; i++) {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), "koma-redis-"));
    const args = ["--bind", "127.0.0.1", "--port", String(port), "--save", "", "--appendonly", "no", "--dir", dir];
    const child = spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    const ready = new Promise((resolve, reject) => {
      child.stdout.on("data", (d) => {
        out += d;
        if (out.includes("Ready to accept connections")) resolve(undefined);
      });
      child.once("error", reject);
      child.once("exit", (code, signal) => reject(new Error(`redis-server ended (${code ?? signal}) before it was ready:\n${out}`)));
    });
    try {
      await ready;
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      if (i < tries && out.includes("Address already in use")) continue;
      throw err;
    }
    child.stdout.resume();
    child.stderr.resume();
    const exited = once(child, "exit");
    return {
      url: `redis://127.0.0.1:${port}`,
      port,
      child,
      /** SIGTERM, and wait for it to end. */
      async stop() {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
        await exited;
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
}
