//! What the binding keeps per Node environment (the main thread's, and each
//! Worker's): its life flag, `JSON.parse` and `JSON.stringify`, and the
//! iterator's factory (`events.js`, compiled once per environment).

use std::cell::RefCell;
use std::rc::Rc;

use napi::sys;

use crate::handles::{EnvLife, OwnedRef};
use crate::js::{Js, Value};
use crate::wake::Wakes;

pub struct EnvData {
    env: sys::napi_env,
    pub life: Rc<EnvLife>,
    json_parse: OwnedRef,
    json_stringify: OwnedRef,
    events_factory: RefCell<Option<OwnedRef>>,
    turn_layer: RefCell<Option<OwnedRef>>,
    /// The environment's one threadsafe function, shared by its clients.
    pub wakes: Wakes,
}

thread_local! {
    /// The environment of this thread (one per thread: the main thread's, or a Worker's).
    static CURRENT: RefCell<Option<Rc<EnvData>>> = const { RefCell::new(None) };
}

/// The sources of the event queue and of the turn layer, named so that stack traces show them.
const EVENTS_JS: &str = concat!(include_str!("events.js"), "\n//# sourceURL=@koma/sdk/events.js\n");
const TURN_JS: &str = concat!(include_str!("turn.js"), "\n//# sourceURL=@koma/sdk/turn.js\n");

impl EnvData {
    /// This thread's data for `js`'s environment, made on first use.
    pub fn of(js: Js) -> napi::Result<Rc<EnvData>> {
        let current = CURRENT.with(|c| c.borrow().clone());
        if let Some(d) = current.filter(|d| d.env == js.0 && d.life.alive()) {
            return Ok(d);
        }
        let life = EnvLife::new(js)?;
        let json = js.get(js.global()?, "JSON")?;
        let data = Rc::new(EnvData {
            env: js.0,
            json_parse: OwnedRef::new(js, &life, js.get(json, "parse")?, true)?,
            json_stringify: OwnedRef::new(js, &life, js.get(json, "stringify")?, true)?,
            events_factory: RefCell::new(None),
            turn_layer: RefCell::new(None),
            wakes: Wakes::new(js, &life)?,
            life,
        });
        CURRENT.with(|c| *c.borrow_mut() = Some(data.clone()));
        Ok(data)
    }

    pub fn json_parse(&self, js: Js) -> napi::Result<Value> {
        self.json_parse.value(js)
    }

    pub fn json_stringify(&self, js: Js) -> napi::Result<Value> {
        self.json_stringify.value(js)
    }

    /// The event queue's factory: `events.js`, compiled on first use.
    pub fn events_factory(&self, js: Js) -> napi::Result<Value> {
        self.compiled(js, &self.events_factory, EVENTS_JS)
    }

    /// The turn layer (`{makeTurn, run}`): `turn.js`, compiled and run on first use.
    pub fn turn_layer(&self, js: Js) -> napi::Result<Value> {
        if let Some(f) = self.turn_layer.borrow().as_ref() {
            return f.value(js);
        }
        let factory = js.run_script(TURN_JS)?;
        let layer = js.call(factory, js.undefined()?, &[])?;
        *self.turn_layer.borrow_mut() = Some(OwnedRef::new(js, &self.life, layer, true)?);
        Ok(layer)
    }

    fn compiled(&self, js: Js, slot: &RefCell<Option<OwnedRef>>, source: &str) -> napi::Result<Value> {
        if let Some(f) = slot.borrow().as_ref() {
            return f.value(js);
        }
        let f = js.run_script(source)?;
        *slot.borrow_mut() = Some(OwnedRef::new(js, &self.life, f, true)?);
        Ok(f)
    }
}
