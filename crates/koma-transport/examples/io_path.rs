//! What the reader spends per small event, for counting instructions with
//! callgrind (repeatable whatever the machine is doing):
//!
//!     cargo build --release -p koma-transport --example io_path
//!     valgrind --tool=callgrind target/<triple>/release/examples/io_path [events] [bytes] [main|run|turn]
//!
//! It feeds the bench workload's event lines (`output` events with a text of
//! `bytes` characters, all of turn `bench`) through the line splitter, the
//! classifier and the turn layer's routing into the event streams, in reads
//! of 256 KiB, as the reader does: with no turn open (`main`: every event
//! for the client's own stream), or with the turn `bench` open as `run()`
//! opens it (`run`: collected, kept nowhere) or as `turn()` does (`turn`:
//! collected and kept for its loop).

use koma_transport::events::{Bound, EventBuffer, Take};
use koma_transport::frame::{classify, Frame, LineSplitter, Violation};
use koma_transport::turns::{ApprovalOption, Entry, Event, TurnSpec, Turns};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, default: usize| args.get(i).map_or(default, |a| a.parse().expect("a number"));
    let events = number(0, 200_000);
    let bytes = number(1, 200);
    let mode = args.get(2).map_or("main", String::as_str);
    let text = "x".repeat(bytes);
    let mut stream = Vec::new();
    for seq in 1..=events {
        stream.extend_from_slice(
            format!("{{\"type\":\"event\",\"seq\":{seq},\"name\":\"output\",\"data\":{{\"turn\":\"bench\",\"text\":\"{text}\"}}}}\n")
                .as_bytes(),
        );
    }
    let mut splitter = LineSplitter::new();
    let mut buffer = EventBuffer::with_bound(Bound::with_limits(usize::MAX, usize::MAX));
    let mut turns = Turns::default();
    let key = 1;
    if mode != "main" {
        let entry = if mode == "run" { Entry::Run } else { Entry::Turn };
        let spec = TurnSpec {
            entry,
            params: Some("{\"text\":\"bench\"}".into()),
            mode: None,
            approvals: ApprovalOption::Text("allow".into()),
            timeout: None,
            stopped: None,
            refused: None,
        };
        turns.open(key, spec);
        // The submit is written, and answered: the turn is `bench`.
        for request in turns.take_effects().requests {
            turns.sent(2, request.key, request.kind);
        }
        turns.answered(&mut buffer, 2, Ok(b"{\"turn\":\"bench\"}"));
    }
    let (mut taken, mut taken_bytes, mut seen) = (0u32, 0u32, 0u64);
    for read in stream.chunks(256 * 1024) {
        let _ = splitter.feed(
            read,
            |line| -> Result<(), Violation> {
                let bytes = line.bytes();
                if let Ok(Frame::Event { seq, name: Some(name), data }) = classify(bytes) {
                    if turns.routes_nothing() {
                        let len = data.len() + name.len() + 24;
                        turns.push_main(&mut buffer, bytes.len(), len, Vec::new(), |out| {
                            out.extend_from_slice(itoa::Buffer::new().format(seq).as_bytes());
                            out.extend_from_slice(b",\"");
                            out.extend_from_slice(name.as_bytes());
                            out.extend_from_slice(b"\",");
                            out.extend_from_slice(&bytes[data]);
                        });
                    } else {
                        turns.deliver(&mut buffer, Event::new(seq, name, bytes.len(), &bytes[data], Vec::new()));
                    }
                    seen += 1;
                }
                Ok(())
            },
            |v| v,
        );
        loop {
            let t = if mode == "turn" { turns.take(key, buffer.epoch(), false) } else { buffer.take() };
            let Take::Batch { count, bytes, .. } = t else { break };
            taken = taken.wrapping_add(count as u32);
            taken_bytes = taken_bytes.wrapping_add(bytes as u32);
            buffer.settle(taken, taken_bytes);
        }
    }
    println!("{seen} events through the reader's path ({mode})");
}
