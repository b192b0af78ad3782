//! The package's JavaScript half: `index.js` registers the functions of
//! `lib/` here when the package loads, once per environment (`__setGlue`).
//! The binding calls them to make what is JavaScript's own: a loop over a
//! stream (`clientStream`) and a Turn (`makeTurn`).

use napi::bindgen_prelude::Object;
use napi::{Env, Result};
use napi_derive::napi;

use crate::delivery::on_wake;
use crate::env::EnvData;
use crate::handles::Js;

/// Called by `index.js` only; not part of the package's API (no typings).
#[napi(js_name = "__setGlue", skip_typescript)]
pub fn set_glue(env: &Env, glue: Object) -> Result<()> {
    let js = Js::new(env);
    EnvData::of(js, on_wake)?.set_glue(js, &glue)
}
