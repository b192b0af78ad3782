//! `@koma/sdk`: the Node binding. It only converts between JavaScript and the
//! `koma-transport` core; the protocol lives there.

mod client;
mod js;
mod types;

pub use client::*;
pub use types::*;
