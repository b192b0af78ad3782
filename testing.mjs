// `@koma/sdk/testing` for ES modules: the CommonJS module's names.
import testing from "./testing.js";

export const { FakeKoma, fakeKoma, readRecord, checkScenario, ScenarioError, step } = testing;
export default testing;
