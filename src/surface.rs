//! Generated from schema/ by scripts/generate.mjs: do not edit.
//! The options of each call of `Client`, by name, from their types in
//! schema/sdk.schema.json: each name and whether it is required. `options.rs`
//! refuses any other key with this list.

/// `new Client(options)`'s (`ClientOptions`).
pub const CLIENT_OPTIONS: &[(&str, bool)] = &[
    ("executable", true),
    ("cwd", false),
    ("env", false),
    ("trace", false),
    ("helloTimeout", false),
    ("telemetry", false),
    ("tracerProvider", false),
    ("meterProvider", false),
    ("captureContent", false),
];
/// Every protocol method's last argument (`CallOptions`).
pub const CALL_OPTIONS: &[(&str, bool)] = &[("signal", false), ("timeout", false)];
/// `turn()`'s (`TurnOptions`); `run()`'s are the same names (`RunOptions`).
pub const TURN_OPTIONS: &[(&str, bool)] =
    &[("mode", false), ("onApproval", false), ("signal", false), ("timeout", false)];
