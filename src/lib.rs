//! `@koma/sdk`: the Node binding. It only converts between JavaScript and the
//! `koma-transport` core; the protocol lives there. The arrows between its
//! files point one way, from the surface down:
//!
//! - `client.rs`: the `#[napi]` surface, `Client`, and where `index.js` registers the package's
//!   JavaScript half (`lib/`);
//! - `turn.rs`: the turn layer's entry (the core runs turns; `lib/turn.js` makes the Turns);
//! - `call.rs`: calls become promises;
//! - `delivery.rs`: completions settled in batches on the JavaScript thread;
//! - `stream.rs`: the native side of the streams of events (`lib/stream.js`);
//! - `trace.rs`: trace records published on the `koma-sdk:trace` channel (`lib/trace.js`);
//! - `telemetry.rs`: OpenTelemetry's route (`lib/telemetry.js` makes the spans and metrics);
//! - `context.rs`: what a client holds on the JavaScript thread;
//! - `abort.rs`: a call's signal and its listener;
//! - `options.rs`: the options JavaScript passes, read and checked once (their typings are
//!   generated from `schema/sdk.schema.json`, as every value type is: `index.d.ts`; their
//!   names too: `surface.rs`);
//! - `surface.rs` (generated): the names of the options of each call;
//! - `env.rs`: what is kept per Node environment;
//! - `wake.rs`: the environment's one threadsafe function, shared by its clients;
//! - `values.rs`: small helpers over napi-rs's values;
//! - `handles/`: the owned Node-API handles, the only `unsafe` code;
//! - `testing.rs`: fault injection, only with the `testing` feature.
#![deny(unsafe_code, unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

mod abort;
mod call;
mod client;
mod context;
mod delivery;
mod env;
mod handles;
mod options;
mod stream;
mod surface;
mod telemetry;
#[cfg(feature = "testing")]
mod testing;
mod trace;
mod turn;
mod values;
mod wake;

pub use client::*;
pub use stream::counter_layout;
pub use telemetry::telemetry_table;
