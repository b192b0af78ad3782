//! What the binding keeps per Node environment (the main thread's, and each
//! Worker's): its life, `JSON.parse` and `JSON.stringify`, the scripts
//! compiled in it (`events.js`, `turn.js`), and its wake-up (`wake.rs`).

use std::cell::RefCell;
use std::rc::Rc;

use napi::bindgen_prelude::{FromNapiValue, Function, JsObjectValue, Object, Unknown};

use crate::handles::{text, EnvLife, Js, OwnedRef};
use crate::wake::{OnWake, Wakes};

pub struct EnvData {
    id: usize,
    pub life: Rc<EnvLife>,
    json_parse: OwnedRef,
    json_stringify: OwnedRef,
    /// Scripts compiled in this environment, by name.
    scripts: RefCell<Vec<(&'static str, OwnedRef)>>,
    /// The environment's one threadsafe function, shared by its clients.
    pub wakes: Wakes,
}

thread_local! {
    /// The environment of this thread (one per thread: the main thread's, or a Worker's).
    static CURRENT: RefCell<Option<Rc<EnvData>>> = const { RefCell::new(None) };
}

impl EnvData {
    /// This thread's data for `js`'s environment, made on first use; its
    /// wakes call `on_wake` with the ids of the clients that have something.
    pub fn of(js: Js, on_wake: OnWake) -> napi::Result<Rc<EnvData>> {
        let current = CURRENT.with(|c| c.borrow().clone());
        if let Some(d) = current.filter(|d| d.id == js.id() && d.life.alive()) {
            return Ok(d);
        }
        let life = EnvLife::new(js)?;
        let json: Object = js.env().get_global()?.get_named_property("JSON")?;
        let parse: Unknown = json.get_named_property("parse")?;
        let stringify: Unknown = json.get_named_property("stringify")?;
        let data = Rc::new(EnvData {
            id: js.id(),
            json_parse: OwnedRef::new(js, &life, &parse, true)?,
            json_stringify: OwnedRef::new(js, &life, &stringify, true)?,
            scripts: RefCell::new(Vec::new()),
            wakes: Wakes::new(js, &life, on_wake)?,
            life,
        });
        CURRENT.with(|c| *c.borrow_mut() = Some(data.clone()));
        Ok(data)
    }

    pub fn json_parse<'e>(&self, js: Js<'e>) -> napi::Result<Function<'e>> {
        Function::from_unknown(self.json_parse.value(js)?)
    }

    pub fn json_stringify<'e>(&self, js: Js<'e>) -> napi::Result<Function<'e>> {
        Function::from_unknown(self.json_stringify.value(js)?)
    }

    /// `JSON.parse` of UTF-8 JSON text.
    pub fn parse<'e>(&self, js: Js<'e>, json: &[u8]) -> napi::Result<Unknown<'e>> {
        self.parse_string(js, text(js, json)?)
    }

    /// `JSON.parse` of a JavaScript string.
    pub fn parse_string<'e>(&self, js: Js<'e>, json: Unknown<'e>) -> napi::Result<Unknown<'e>> {
        #[cfg(feature = "testing")]
        if crate::testing::fail_this_parse() {
            return Err(napi::Error::from_reason("KOMA_SDK_TEST_NAPI_FAIL=parse"));
        }
        self.json_parse(js)?.call(json)
    }

    /// The completion value of `source`, compiled and run once in this
    /// environment under `name`, then the same value.
    pub fn script<'e>(&self, js: Js<'e>, name: &'static str, source: &str) -> napi::Result<Unknown<'e>> {
        if let Some((_, r)) = self.scripts.borrow().iter().find(|(n, _)| *n == name) {
            return r.value(js);
        }
        let named = format!("{source}\n//# sourceURL=@koma/sdk/{name}\n");
        let value: Unknown = js.env().run_script(named)?;
        self.scripts.borrow_mut().push((name, OwnedRef::new(js, &self.life, &value, true)?));
        Ok(value)
    }
}
