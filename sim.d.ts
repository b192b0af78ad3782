/**
 * The path of `koma-sim`, a deterministic stand-in for `koma` that speaks the
 * same protocol: `new Client({ executable: simPath })`. It is always a
 * string: where koma-sim cannot be found, there is no value to read and an
 * error is thrown instead (see below).
 *
 * koma-sim is a native program and ships in this platform's package
 * (`@koma/sdk-linux-x64-gnu`, `@koma/sdk-darwin-arm64`, ...), beside the addon.
 * It is looked up in this order:
 * 1. the environment variable `KOMA_SIM_PATH`, when set (for a bundle, a
 *    single-file executable, or a koma-sim you built);
 * 2. `bin/koma-sim` beside the package (a checkout of the repository after
 *    `npm run build`);
 * 3. `koma-sim` in the installed platform package.
 *
 * When none is there, a {@link KomaSimNotFoundError} (`code:
 * "ERR_KOMA_SIM_NOT_FOUND"`) names the platform and the package it looked
 * for, and says how to build koma-sim and point `KOMA_SIM_PATH` at it. When it
 * is thrown depends on how the module is loaded, since an ES module's import
 * is bound when the module loads:
 * - ES modules (`import { simPath }` or `import sim from`): the import
 *   throws; `await import("@koma/sdk/sim")` rejects with it.
 * - CommonJS (`require("@koma/sdk/sim")`): `require` never throws; reading
 *   `simPath` throws, and looks koma-sim up again each time it is read.
 *
 * @throws {KomaSimNotFoundError} where koma-sim cannot be found.
 */
export declare const simPath: string;

/** The error of a koma-sim that cannot be found. */
export interface KomaSimNotFoundError extends Error {
  code: "ERR_KOMA_SIM_NOT_FOUND";
}
