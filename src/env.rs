//! What the binding keeps per Node environment (the main thread's, and each
//! Worker's): its life, `JSON.parse` and `JSON.stringify`, the package's
//! JavaScript half (`lib/`, registered by `index.js`: see `client.rs`), and its
//! wake-up (`wake.rs`).

use std::cell::RefCell;
use std::rc::Rc;

use napi::bindgen_prelude::{FromNapiValue, Function, JsObjectValue, Object, Unknown};

use crate::handles::{set_error_maker, text, EnvLife, Js, OwnedRef};
use crate::wake::{OnWake, Wakes};

pub struct EnvData {
    id: usize,
    pub life: Rc<EnvLife>,
    json_parse: OwnedRef,
    json_stringify: OwnedRef,
    /// The functions of `lib/` that `index.js` registered in this environment.
    /// The functions of the package's JavaScript half (`lib/`), by name.
    js_half: RefCell<Option<OwnedRef>>,
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
            js_half: RefCell::new(None),
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

    /// Register the package's JavaScript half (done once per environment, by `index.js`).
    /// Its `makeError` makes every error of this environment from now on.
    pub fn set_js_half(&self, js: Js, functions: &Object) -> napi::Result<()> {
        *self.js_half.borrow_mut() = Some(OwnedRef::new(js, &self.life, functions, true)?);
        set_error_maker(js, &self.life, &functions.get_named_property::<Unknown>("makeError")?)
    }

    /// The function `name` of the package's JavaScript half.
    pub fn js_fn<'e>(&self, js: Js<'e>, name: &str) -> napi::Result<Unknown<'e>> {
        let functions = self.js_half.borrow();
        let Some(functions) = functions.as_ref() else {
            return Err(napi::Error::from_reason(
                "the JavaScript half of @koma/sdk is missing: load the package (its index.js), not its binding alone",
            ));
        };
        let functions = Object::from_unknown(functions.value(js)?)?;
        functions.get_named_property(name)
    }
}
