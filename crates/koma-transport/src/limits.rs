//! Generated from schema/ by scripts/generate.mjs: do not edit.
//! The protocol's numbers: its version and its bounds (docs/protocol.md, Bounds).

/// A stdout frame over this many bytes of JSON text is fatal; a request over it is not written (40
/// MiB; docs/protocol.md, Bounds).
pub const MAX_FRAME_BYTES: usize = 41943040;
/// At most this many requests written and not yet answered (64; docs/protocol.md, Bounds).
pub const MAX_PENDING: usize = 64;
/// At most this many event frames buffered and not yet taken (256; docs/protocol.md, Bounds).
pub const MAX_BUFFERED_EVENTS: usize = 256;
/// At most this many bytes of event JSON buffered and not yet taken (64 MiB; docs/protocol.md,
/// Bounds).
pub const MAX_BUFFERED_EVENT_BYTES: usize = 67108864;
/// The newest this many bytes of stderr are kept (64 KiB; docs/protocol.md, Bounds).
pub const STDERR_KEEP_BYTES: usize = 65536;
/// The only protocol version this client speaks.
pub const PROTOCOL_VERSION: u64 = 1;
