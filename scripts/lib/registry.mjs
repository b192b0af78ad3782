// A package registry on the loopback address that serves a few tarballs, so
// that `npm install` resolves a package and its optionalDependencies by name
// and version, the way a user's install does from the public registry
// (scripts/release-lib.mjs checks which platform package npm picks for each
// --os/--cpu/--libc). Node's built-ins only.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { basename } from "node:path";

/**
 * Serve `packages` ([{file, manifest}], one version of each name) on
 * 127.0.0.1; resolves to {url, close()}. Any other name is a 404, as a name
 * the registry does not have.
 */
export function serve(packages) {
  const byName = new Map();
  const files = new Map();
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://x").pathname).replace(/^\//, "");
    const file = files.get(path);
    if (file) {
      res.writeHead(200, { "content-type": "application/octet-stream" });
      return res.end(readFileSync(file));
    }
    const doc = byName.get(path);
    if (!doc) {
      res.writeHead(404, { "content-type": "application/json" });
      return res.end('{"error":"not found"}');
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(doc));
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const url = `http://127.0.0.1:${server.address().port}`;
      for (const { file, manifest } of packages) {
        const data = readFileSync(file);
        const tarPath = `${manifest.name}/-/${basename(file)}`;
        files.set(tarPath, file);
        byName.set(manifest.name, {
          name: manifest.name,
          "dist-tags": { latest: manifest.version },
          versions: {
            [manifest.version]: {
              ...manifest,
              _id: `${manifest.name}@${manifest.version}`,
              dist: {
                tarball: `${url}/${tarPath}`,
                shasum: createHash("sha1").update(data).digest("hex"),
                integrity: `sha512-${createHash("sha512").update(data).digest("base64")}`,
              },
            },
          },
        });
      }
      resolve({ url, close: () => new Promise((done) => server.close(done)) });
    });
  });
}
