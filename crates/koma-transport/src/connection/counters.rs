//! The counters of the event stream that the core and the host share without
//! a lock, so that taking an event needs no call into the core.

use std::sync::atomic::{AtomicU32, Ordering};

/// The core's shared-counter format, which any host reads and writes in
/// place: [`EventCounters::SLOTS`] 32-bit unsigned integers in the
/// machine's byte order, one after another ([`EventCounters::byte_len`]
/// bytes from [`EventCounters::as_ptr`], 4-byte aligned), each accessed
/// whole and atomically. [`EventCounters::LAYOUT`] names the index of each
/// slot, so a host looks the slots up by name instead of copying numbers.
///
/// The counts wrap at 2^32; the core only ever subtracts one reading of a
/// count from a later one, so a wrap is harmless.
///
/// How a host takes events and counts them here (`Connection::take_events`
/// or `take_turn_events` lends a batch and writes `BATCH_EPOCH` and
/// `BATCH_COUNTING`; see [`crate::events::Counting`]) is specified once in
/// the docs ("The shared counters"), with the cases every host passes in
/// testdata/counting.json.
#[repr(C)]
#[derive(Default)]
pub struct EventCounters {
    slots: [AtomicU32; EventCounters::SLOTS],
}

impl EventCounters {
    /// The epoch of lent batches: written by the core (an overflow bumps
    /// it), read by the host before it takes each event.
    pub const EPOCH: usize = 0;
    /// The running count of events the application has taken: written by the host.
    pub const TAKEN: usize = 1;
    /// The epoch of the batch last lent: written by the core when it lends
    /// one, on the host's thread; read by the host to know the epoch of the
    /// batch it got.
    pub const BATCH_EPOCH: usize = 2;
    /// The running count of the frame bytes of the events taken: written by the host.
    pub const TAKEN_BYTES: usize = 3;
    /// How the events of the batch last lent count (the number of a
    /// [`crate::events::Counting`]): written by the core when it lends one,
    /// on the host's thread.
    pub const BATCH_COUNTING: usize = 4;
    /// How many slots there are.
    pub const SLOTS: usize = 5;
    /// The index of each slot, by name.
    pub const LAYOUT: [(&'static str, usize); 5] = [
        ("EPOCH", Self::EPOCH),
        ("TAKEN", Self::TAKEN),
        ("BATCH_EPOCH", Self::BATCH_EPOCH),
        ("TAKEN_BYTES", Self::TAKEN_BYTES),
        ("BATCH_COUNTING", Self::BATCH_COUNTING),
    ];

    pub fn as_ptr(&self) -> *mut u32 {
        self.slots.as_ptr() as *mut u32
    }

    pub fn byte_len(&self) -> usize {
        std::mem::size_of::<Self>()
    }

    /// The running counts of events, and of their frame bytes, taken.
    pub fn taken(&self) -> (u32, u32) {
        (self.slots[Self::TAKEN].load(Ordering::Acquire), self.slots[Self::TAKEN_BYTES].load(Ordering::Acquire))
    }

    /// The application took `n` more events of `bytes` in all (for a host
    /// that counts through this type rather than through the raw slots).
    pub fn add_taken(&self, n: u32, bytes: u32) {
        self.slots[Self::TAKEN_BYTES].fetch_add(bytes, Ordering::AcqRel);
        self.slots[Self::TAKEN].fetch_add(n, Ordering::AcqRel);
    }

    pub fn set_epoch(&self, epoch: u32) {
        self.slots[Self::EPOCH].store(epoch, Ordering::Release);
    }

    /// A batch was lent: its epoch and how its events count.
    pub fn set_batch(&self, epoch: u32, counting: crate::events::Counting) {
        self.slots[Self::BATCH_EPOCH].store(epoch, Ordering::Relaxed);
        self.slots[Self::BATCH_COUNTING].store(counting as u32, Ordering::Relaxed);
    }
}
