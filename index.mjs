// Generated from schema/ by scripts/generate.mjs: do not edit.
// `@koma/sdk` for ES modules: the names of the CommonJS entry (index.js).
import sdk from "./index.js";

export const {
  Client,
  KomaError,
  isKomaError,
  RemoteFailure,
  DeliveryUnknown,
  TransportFailure,
  SpawnFailed,
  ProtocolError,
  ProtocolMismatch,
  FrameTooLarge,
  TooManyPending,
  LifecycleError,
  Unsupported,
  InvalidParams,
  ClientClosed,
  Aborted,
  TimedOut,
} = sdk;
export default sdk;
