//! The owned-handle layer: the one place that calls Node-API directly, and
//! the only place with `unsafe`. Everything above it uses napi-rs's safe API
//! and the owned handles made here, so that a leak, a double settle or a use
//! on the wrong thread cannot be written outside this folder:
//!
//! - [`Js`]: an environment that is running a call into the addon, which
//!   code outside this layer cannot forge or keep;
//! - [`EnvLife`]: whether an environment still lives;
//! - [`OwnedRef`]: a reference, deleted when dropped;
//! - [`Deferred`]: a promise's resolver, consumed when it settles;
//! - [`Tsfn`]: the threadsafe function that wakes the JavaScript thread;
//! - [`function`]: a native function with typed data;
//! - [`on_collect`]: native code run when an object is collected (Node-API's
//!   finalizer, never a JavaScript `FinalizationRegistry`);
//! - [`coded_error`]: an `Error` with a `code` of docs/protocol.md (Error codes);
//! - the hot paths' raw calls: JSON text as a string for `JSON.parse`
//!   ([`text`]), lifted strings put back ([`put_lifted`], external strings
//!   from 1 MiB), and memory shared with the core as an `ArrayBuffer`
//!   ([`external_array_buffer`]).
//!
//! Everything here runs on the JavaScript thread of its environment, except
//! [`TsfnWaker::wake`].
#![allow(unsafe_code)] // the crate denies it everywhere else

mod buffer;
mod deferred;
mod error;
mod finalizer;
mod function;
mod js;
mod node_symbol;
mod reference;
mod strings;
mod tsfn;

pub use buffer::external_array_buffer;
pub use deferred::Deferred;
pub use error::{coded_error, set_error_maker};
pub use finalizer::on_collect;
pub use function::{function, NativeFn};
pub use js::{EnvLife, Js};
pub use reference::OwnedRef;
pub use strings::{put_lifted, text};
pub use tsfn::{Tsfn, TsfnHandle, TsfnWaker, WakeTarget};
