//! The turn worker: one thread that advances the active turn step by step,
//! under the core lock, and sleeps on the condition variable when the turn
//! waits (for an approval, a pace delay) or when there is none.

use crate::agent::Wake;
use crate::server::shared::{lock, Shared};
use std::sync::Arc;

pub fn start(sh: Arc<Shared>) {
    std::thread::Builder::new().name("agent".into()).spawn(move || worker(sh)).expect("spawn");
}

fn worker(sh: Arc<Shared>) {
    let mut g = lock(&sh.core);
    loop {
        if g.shutdown {
            return;
        }
        match g.advance() {
            Wake::Again => {
                drop(g);
                g = lock(&sh.core);
            }
            Wake::Idle => g = sh.cv.wait(g).unwrap_or_else(|e| e.into_inner()),
            Wake::After(d) => g = sh.cv.wait_timeout(g, d).unwrap_or_else(|e| e.into_inner()).0,
        }
    }
}
