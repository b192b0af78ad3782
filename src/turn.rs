//! The `Turn` class: a thin handle on the turn layer's JavaScript object
//! (`turn.js`), which does the work; the class gives it its typings.

use napi::Env;
use napi_derive::napi;

use crate::client::Raw;
use crate::handles::OwnedRef;
use crate::js::Js;

/// A turn started by `client.turn()`: an async iterable of its events (its
/// `turn_started` through its `turn_finished`, with the `state` and
/// `diagnostic` events between them, and an overflow report if one hit),
/// its id, its result, and a way to interrupt it. Made by `client.turn()`.
#[napi]
pub struct Turn {
    inner: OwnedRef,
}

impl Turn {
    pub(crate) fn new(inner: OwnedRef) -> Self {
        Turn { inner }
    }

    fn get(&self, env: Env, name: &str) -> napi::Result<Raw> {
        let js = Js(env.raw());
        js.get(self.inner.value(js)?, name).map(Raw::from)
    }

    fn call(&self, env: Env, name: &str) -> napi::Result<Raw> {
        let js = Js(env.raw());
        let this = self.inner.value(js)?;
        let f = js.get(this, name)?;
        js.call(f, this, &[]).map(Raw::from)
    }
}

#[napi]
impl Turn {
    /// The turn id, once `submit` (or `interrupt_and_submit`) has answered.
    /// Rejects as the submit does (for example remote `busy`).
    #[napi(catch_unwind, getter, ts_return_type = "Promise<string>")]
    pub fn id(&self, env: Env) -> napi::Result<Raw> {
        self.get(env, "id")
    }

    /// The turn's result, once its `turn_finished` has arrived. Rejects with
    /// `aborted` or `timeout` (after the agent was interrupted), with the
    /// error of an `onApproval` that threw (after the turn finished), or with
    /// the client's error if it failed first.
    #[napi(catch_unwind, getter, ts_return_type = "Promise<TurnResult>")]
    pub fn result(&self, env: Env) -> napi::Result<Raw> {
        self.get(env, "result")
    }

    /// Interrupt this turn if it is still running (nothing is written otherwise).
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn interrupt(&self, env: Env) -> napi::Result<Raw> {
        self.call(env, "interrupt")
    }

    /// The turn's events; `for await (const item of turn)`. One queue per
    /// Turn: iterating again goes on from where the last loop stopped.
    #[napi(catch_unwind, well_known_symbol = "asyncIterator", ts_return_type = "AsyncIterator<EventItem>")]
    pub fn iterator(&self, env: Env) -> napi::Result<Raw> {
        self.call(env, "iterator")
    }
}
