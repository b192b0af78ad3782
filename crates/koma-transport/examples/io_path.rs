//! What the reader spends per small event, for counting instructions with
//! callgrind (repeatable whatever the machine is doing):
//!
//!     cargo build --release -p koma-transport --example io_path
//!     valgrind --tool=callgrind target/<triple>/release/examples/io_path [events] [bytes]
//!
//! It feeds the bench workload's event lines (`output` events with a text of
//! `bytes` characters) through the line splitter, the classifier and the
//! event buffer, in reads of 256 KiB, as the reader does.

use koma_transport::events::{EventBuffer, Take};
use koma_transport::frame::{classify, Frame, LineSplitter, Violation};

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("a number")).collect();
    let events = args.first().copied().unwrap_or(200_000);
    let bytes = args.get(1).copied().unwrap_or(200);
    let text = "x".repeat(bytes);
    let mut stream = Vec::new();
    for seq in 1..=events {
        stream.extend_from_slice(
            format!("{{\"type\":\"event\",\"seq\":{seq},\"name\":\"output\",\"data\":{{\"turn\":\"bench\",\"text\":\"{text}\"}}}}\n")
                .as_bytes(),
        );
    }
    let mut splitter = LineSplitter::new();
    let mut buffer = EventBuffer::with_bounds(usize::MAX, usize::MAX);
    let (mut taken, mut taken_bytes, mut seen) = (0u32, 0u32, 0u64);
    for read in stream.chunks(256 * 1024) {
        let _ = splitter.feed(
            read,
            |line| -> Result<(), Violation> {
                let bytes = line.bytes();
                if let Ok(Frame::Event { seq, name: Some(name), data }) = classify(bytes) {
                    let len = data.len() + name.len() + 24;
                    buffer.push(bytes.len(), len, Vec::new(), |out| {
                        out.extend_from_slice(itoa::Buffer::new().format(seq).as_bytes());
                        out.extend_from_slice(b",\"");
                        out.extend_from_slice(name.as_bytes());
                        out.extend_from_slice(b"\",");
                        out.extend_from_slice(&bytes[data]);
                    });
                    seen += 1;
                }
                Ok(())
            },
            |v| v,
        );
        while let Take::Batch { count, bytes, .. } = buffer.take() {
            taken = taken.wrapping_add(count as u32);
            taken_bytes = taken_bytes.wrapping_add(bytes as u32);
            buffer.settle(taken, taken_bytes);
        }
    }
    println!("{seen} events through the reader's path");
}
