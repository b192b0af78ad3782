/**
 * The path of `koma-sim`, a deterministic stand-in for `koma` that speaks the
 * same protocol: `new Client({ executable: simPath })`.
 *
 * koma-sim is a native program and ships in this platform's package
 * (`@koma/sdk-linux-x64-gnu`, `@koma/sdk-darwin-arm64`, ...), beside the addon.
 * It is looked up when `simPath` is read:
 * 1. the environment variable `KOMA_SIM_PATH`, when set (for a bundle, a
 *    single-file executable, or a koma-sim you built);
 * 2. `bin/koma-sim` beside the package (a checkout of the repository after
 *    `npm run build`);
 * 3. `koma-sim` in the installed platform package.
 *
 * Reading it throws an `Error` with `code: "ERR_KOMA_SIM_NOT_FOUND"` when none
 * is there: the message names the platform and the package it looked for, and
 * says how to build koma-sim and point `KOMA_SIM_PATH` at it. Loading
 * `@koma/sdk/sim` itself never throws. (An ES module's named import is read
 * once, when Node loads the module, and is `undefined` where koma-sim cannot
 * be found; read `simPath` from the module's default export to get the error.)
 */
export declare const simPath: string;
