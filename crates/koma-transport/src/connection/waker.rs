//! How the core tells the host that something is ready.

/// Called (from any thread) when completions or events are ready for the
/// host. It is called once per batch, not per completion: the host's thread
/// then drains everything that is ready in one go.
pub trait Waker: Send + Sync + 'static {
    fn wake(&self);
}
