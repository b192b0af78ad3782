// The path of the bundled koma-sim binary, a stand-in for `koma` that speaks
// the same protocol: `new Client({ executable: require("@koma/sdk/sim").simPath })`.
const { join } = require("node:path");

const simPath = join(__dirname, "bin", process.platform === "win32" ? "koma-sim.exe" : "koma-sim");

module.exports = { simPath };
