//! What a child made by `fork()` inherits and cannot use: threads do not
//! survive a fork, so a value that owns threads or may have been locked by
//! one (the record of the I/O threads, see `threads.rs`) must be made again
//! in the child, and the parent's copy left alone: never dropped, joined or
//! locked there, as its threads do not exist.
//!
//! A `pthread_atfork` child handler, registered once, bumps [`generation`];
//! a [`ForkLocal`] remembers the generation its value was made in and makes
//! a new one when that has changed. The price on every use is a few atomic
//! loads: no system call, no lock.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

static GENERATION: AtomicU64 = AtomicU64::new(0);
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// Which process image this is: changes in every child made by `fork()`
/// (once this has been called in the parent). A value made in one
/// generation belongs to the process that made it.
pub fn generation() -> u64 {
    if !REGISTERED.load(Ordering::Acquire) {
        register();
    }
    GENERATION.load(Ordering::Acquire)
}

#[cold]
fn register() {
    // Windows has no fork: the generation never changes there.
    #[cfg(unix)]
    if !REGISTERED.swap(true, Ordering::AcqRel) {
        register_atfork();
    }
}

#[cfg(unix)]
fn register_atfork() {
    // SAFETY: registers a handler that only does an atomic add, which is
    // async-signal-safe, as a handler run in a forked child must be. glibc
    // drops the handler if the library that holds it is unloaded.
    let rc = unsafe { libc::pthread_atfork(None, None, Some(forked)) };
    // Only ENOMEM can fail it; then a forked child cannot tell, as before
    // this existed, and nothing else is lost.
    debug_assert_eq!(rc, 0, "pthread_atfork failed");
}

/// Runs in the child, in the thread that called `fork()`, before `fork()`
/// returns there.
#[cfg(unix)]
extern "C" fn forked() {
    GENERATION.fetch_add(1, Ordering::AcqRel);
}

/// A value made once per process image, on first use, and never dropped.
pub(crate) struct ForkLocal<T> {
    current: AtomicPtr<Made<T>>,
    /// The generation plus one whose value a thread is making (0: none).
    making: AtomicU64,
}

struct Made<T> {
    generation: u64,
    value: T,
}

impl<T: Send + Sync + 'static> ForkLocal<T> {
    pub const fn new() -> Self {
        ForkLocal { current: AtomicPtr::new(std::ptr::null_mut()), making: AtomicU64::new(0) }
    }

    /// This process's value, made with `make` if there is none yet.
    pub fn get(&'static self, make: impl FnOnce() -> T) -> &'static T {
        let generation = generation();
        match self.current(generation) {
            Some(value) => value,
            None => self.make(generation, make),
        }
    }

    /// The value, if it was made in `generation`.
    fn current(&'static self, generation: u64) -> Option<&'static T> {
        let made = self.current.load(Ordering::Acquire);
        // SAFETY: `current` is null or a pointer from `Box::into_raw` that is
        // never freed, published with Release after it was written.
        let made = unsafe { made.as_ref() }?;
        (made.generation == generation).then_some(&made.value)
    }

    #[cold]
    fn make(&'static self, generation: u64, make: impl FnOnce() -> T) -> &'static T {
        let claim = generation + 1;
        loop {
            // One thread makes it; the others wait for it. A claim of another
            // generation is the parent's, whose thread is gone: take it over.
            let seen = self.making.load(Ordering::Acquire);
            if seen != claim && self.making.compare_exchange(seen, claim, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                let unclaim = Unclaim(&self.making);
                let made = Box::into_raw(Box::new(Made { generation, value: make() }));
                // The previous value (the parent's, in a forked child) is leaked on purpose.
                self.current.store(made, Ordering::Release);
                std::mem::forget(unclaim);
                // SAFETY: just made from a Box, and never freed.
                return unsafe { &(*made).value };
            }
            if let Some(value) = self.current(generation) {
                return value;
            }
            std::thread::yield_now();
        }
    }
}

/// Drops the claim if making the value panicked, so that another thread can try.
struct Unclaim<'a>(&'a AtomicU64);

impl Drop for Unclaim<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}
