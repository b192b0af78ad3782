// `@koma/sdk/sim` for ES modules. An ES module's import is bound once, when
// the module is loaded, so the look-up happens then: where koma-sim cannot be
// found, importing this module (by name or by default) throws the
// ERR_KOMA_SIM_NOT_FOUND error that reading `simPath` throws in CommonJS,
// never an `undefined` path that `new Client()` would refuse for its type.
import sim from "./sim.js";

export const simPath = sim.simPath;
export default sim;
