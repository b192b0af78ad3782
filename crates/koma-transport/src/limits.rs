//! The protocol's numbers: its version and its bounds.

/// A stdout frame over this many bytes of JSON text is fatal (docs/protocol.md, Bounds).
pub const MAX_FRAME_BYTES: usize = 41_943_040;
/// At most this many requests written and not yet answered (docs/protocol.md, Bounds).
pub const MAX_PENDING: usize = 64;
/// At most this many event frames buffered and not yet taken (docs/protocol.md, Bounds).
pub const MAX_BUFFERED_EVENTS: usize = 256;
/// At most this many bytes of event JSON buffered and not yet taken (docs/protocol.md, Bounds).
pub const MAX_BUFFERED_EVENT_BYTES: usize = 67_108_864;
/// The newest this many bytes of stderr are kept (docs/protocol.md, stderr).
pub const STDERR_KEEP_BYTES: usize = 65_536;
/// The only protocol version this client speaks.
pub const PROTOCOL_VERSION: u64 = 1;
