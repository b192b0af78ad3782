//! `@koma/sdk`: the Node binding. It only converts between JavaScript and the
//! `koma-transport` core; the protocol lives there.
//!
//! - `client.rs`: the `#[napi]` surface;
//! - `delivery.rs`: completions settled in batches on the JavaScript thread;
//! - `stream.rs`: the native side of the event queue (`events.js`);
//! - `turn.rs`: the `Turn` class, over the turn layer (`turn.js`);
//! - `call.rs`: call options, promises and abort listeners;
//! - `handles.rs`: owned Node-API handles (references, deferreds, the
//!   threadsafe function, native functions);
//! - `env.rs`: what is kept per Node environment;
//! - `wake.rs`: the environment's one threadsafe function, shared by its clients;
//! - `js.rs`: small value helpers.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

mod call;
mod client;
mod delivery;
mod env;
mod handles;
mod js;
mod stream;
mod turn;
mod types;
mod wake;

pub use client::*;
pub use turn::*;
pub use types::*;
