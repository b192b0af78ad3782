//! The fault switches of `KOMA_SIM_FAULT`: one table gives each switch's
//! name, its group and a line on what it does, so that the parser, the help
//! and the error for a misspelt switch can never disagree.

/// Faults that replace the answer to the first request with bad (or odd) frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameFault {
    BlankLine,
    Pretty,
    LogLine,
    InvalidUtf8,
    JsonArray,
    JsonScalar,
    UnknownType,
    SecondHello,
    BothResultError,
    Neither,
    SeqGap,
    SeqRepeat,
    Frame40Mib,
    FrameOver40Mib,
}

/// The switches a run was started with.
#[derive(Debug, Default)]
pub struct Faults {
    pub no_hello: bool,
    pub protocol_2: bool,
    pub protocol_string: bool,
    pub protocol_missing: bool,
    pub protocol_float: bool,
    pub protocol_true: bool,
    pub late_hello: bool,
    pub bom: bool,
    pub stderr_flood: bool,
    pub exit_mid_request: bool,
    pub kill_mid_request: bool,
    pub never_answer: bool,
    pub hold: bool,
    pub unknown_ids: bool,
    pub unknown_event: bool,
    pub event_flood: bool,
    pub odd_status: bool,
    pub ignore_detach: bool,
    pub ignore_eof: bool,
    pub ignore_sigterm: bool,
    pub crlf: bool,
    pub split_writes: bool,
    pub orphan_tool: bool,
    pub spawn_tool: bool,
    /// In the order given in `KOMA_SIM_FAULT`.
    pub frame: Vec<FrameFault>,
}

/// Where a switch acts; the help lists the switches under these headings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    Hello,
    Frame,
    Answer,
    Process,
    Framing,
}

impl Group {
    pub const ALL: [Group; 5] = [Group::Hello, Group::Frame, Group::Answer, Group::Process, Group::Framing];

    pub fn heading(self) -> &'static str {
        match self {
            Group::Hello => "hello",
            Group::Frame => "in place of the answer to the first request",
            Group::Answer => "answers",
            Group::Process => "the process",
            Group::Framing => "valid framing variants",
        }
    }
}

/// What turning a switch on changes.
#[derive(Clone, Copy)]
enum Effect {
    Frame(FrameFault),
    Flag(fn(&mut Faults) -> &mut bool),
}

/// One switch of `KOMA_SIM_FAULT`.
pub struct Switch {
    pub name: &'static str,
    pub group: Group,
    /// One line on what it does (for the help).
    pub about: &'static str,
    effect: Effect,
}

const fn flag(name: &'static str, group: Group, about: &'static str, field: fn(&mut Faults) -> &mut bool) -> Switch {
    Switch { name, group, about, effect: Effect::Flag(field) }
}

const fn frame(name: &'static str, about: &'static str, fault: FrameFault) -> Switch {
    Switch { name, group: Group::Frame, about, effect: Effect::Frame(fault) }
}

/// Every switch, in the order the help lists them.
pub const SWITCHES: &[Switch] = &[
    flag("no_hello", Group::Hello, "never sends hello; reads stdin to its end, then exits 0", |f| &mut f.no_hello),
    flag("protocol_2", Group::Hello, "hello says \"protocol\":2; then only counts stdin bytes", |f| &mut f.protocol_2),
    flag("protocol_string", Group::Hello, "hello says \"protocol\":\"1\"; then only counts stdin bytes", |f| {
        &mut f.protocol_string
    }),
    flag("protocol_missing", Group::Hello, "hello has no protocol; then only counts stdin bytes", |f| {
        &mut f.protocol_missing
    }),
    flag("protocol_float", Group::Hello, "hello says \"protocol\":1.0; then only counts stdin bytes", |f| {
        &mut f.protocol_float
    }),
    flag("protocol_true", Group::Hello, "hello says \"protocol\":true; then only counts stdin bytes", |f| {
        &mut f.protocol_true
    }),
    flag("late_hello", Group::Hello, "waits 300 ms before hello", |f| &mut f.late_hello),
    flag("bom", Group::Hello, "the hello line starts with a UTF-8 byte-order mark", |f| &mut f.bom),
    frame("blank_line", "an empty line", FrameFault::BlankLine),
    frame("pretty", "the answer, pretty-printed over several lines", FrameFault::Pretty),
    frame("log_line", "the line INFO starting worker", FrameFault::LogLine),
    frame("invalid_utf8", "an answer holding the raw bytes FF FE", FrameFault::InvalidUtf8),
    frame("json_array", "the line [1,2,3]", FrameFault::JsonArray),
    frame("json_scalar", "the line 42", FrameFault::JsonScalar),
    frame("unknown_type", "a frame with \"type\":\"bogus\"", FrameFault::UnknownType),
    frame("second_hello", "the hello frame again", FrameFault::SecondHello),
    frame("both_result_error", "a response with both result and error", FrameFault::BothResultError),
    frame("neither", "a frame with neither type nor id", FrameFault::Neither),
    frame("seq_gap", "two diagnostic events numbered N and N+2", FrameFault::SeqGap),
    frame("seq_repeat", "two diagnostic events both numbered N", FrameFault::SeqRepeat),
    frame("frame_40mib", "an answer of exactly 41,943,040 bytes (40 MiB)", FrameFault::Frame40Mib),
    frame("frame_over_40mib", "an answer one byte over 40 MiB", FrameFault::FrameOver40Mib),
    flag("never_answer", Group::Answer, "answers nothing but detach (requests still act)", |f| &mut f.never_answer),
    flag("hold", Group::Answer, "holds every answer but detach's; SIGUSR1 sends them, newest first", |f| &mut f.hold),
    flag("unknown_ids", Group::Answer, "a response with an unknown id before each answer", |f| &mut f.unknown_ids),
    flag("unknown_event", Group::Answer, "an unknown event before each answer; an extra field on every frame", |f| {
        &mut f.unknown_event
    }),
    flag("event_flood", Group::Answer, "2000 output events on the first submit, before its answer", |f| {
        &mut f.event_flood
    }),
    flag("odd_status", Group::Answer, "every turn_finished says \"status\":\"escalated\", outside the catalog", |f| {
        &mut f.odd_status
    }),
    flag("stderr_flood", Group::Process, "1 MiB of stderr lines before hello", |f| &mut f.stderr_flood),
    flag("exit_mid_request", Group::Process, "exits with code 3 on the first request, unanswered", |f| {
        &mut f.exit_mid_request
    }),
    flag("kill_mid_request", Group::Process, "kills itself with SIGKILL on the first request", |f| {
        &mut f.kill_mid_request
    }),
    flag("orphan_tool", Group::Process, "on the first request starts a tool that holds stdout, then exits 1", |f| {
        &mut f.orphan_tool
    }),
    flag("spawn_tool", Group::Process, "at startup starts a tool in koma-sim's process group", |f| &mut f.spawn_tool),
    flag("ignore_detach", Group::Process, "reads detach and does nothing: no answer, no exit", |f| {
        &mut f.ignore_detach
    }),
    flag("ignore_eof", Group::Process, "keeps running after the end of stdin, until killed", |f| &mut f.ignore_eof),
    flag("ignore_sigterm", Group::Process, "ignores SIGTERM", |f| &mut f.ignore_sigterm),
    flag("crlf", Group::Framing, "every frame ends with \\r\\n", |f| &mut f.crlf),
    flag("split_writes", Group::Framing, "every byte is written with its own write(2)", |f| &mut f.split_writes),
];

/// What a switch of the process group means on Windows, where there are no
/// signals, no process groups and no `sleep`. Every other switch means the
/// same everywhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnWindows {
    /// Acts, with this meaning.
    Means(&'static str),
    /// Refused: `KOMA_SIM_FAULT` naming it exits 64 with this reason.
    Refused(&'static str),
}

/// The switches whose Windows meaning differs (docs/koma-sim.md lists them).
pub const ON_WINDOWS: &[(&str, OnWindows)] = &[
    ("hold", OnWindows::Refused("it releases the held answers on SIGUSR1, and Windows has no signals")),
    (
        "kill_mid_request",
        OnWindows::Means("ends itself with TerminateProcess, exit code 1, as a kill from outside does"),
    ),
    (
        "orphan_tool",
        OnWindows::Means(
            "starts a copy of koma-sim that sleeps (Windows has no `sleep`) and holds stdout, then exits 1; it is in koma's Job Object",
        ),
    ),
    (
        "spawn_tool",
        OnWindows::Means("starts a copy of koma-sim that sleeps, in koma-sim's Job Object (Windows has no process groups)"),
    ),
    (
        "ignore_sigterm",
        OnWindows::Means("nothing to ignore: Windows has no SIGTERM (the client's stop sequence ends the Job Object instead)"),
    ),
    ("split_writes", OnWindows::Means("every byte is written with its own WriteFile")),
];

/// The names of every switch, comma-separated (for an error message).
pub fn names() -> String {
    SWITCHES.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
}

impl Faults {
    pub fn parse(list: &str) -> Result<Faults, String> {
        let mut f = Faults::default();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some(switch) = SWITCHES.iter().find(|s| s.name == name) else {
                return Err(format!("unknown fault switch `{name}` in KOMA_SIM_FAULT; the switches are: {}", names()));
            };
            #[cfg(windows)]
            if let Some((_, OnWindows::Refused(why))) = ON_WINDOWS.iter().find(|(n, _)| *n == name) {
                return Err(format!("the fault switch `{name}` has no meaning on Windows: {why}"));
            }
            match switch.effect {
                Effect::Frame(ff) if !f.frame.contains(&ff) => f.frame.push(ff),
                Effect::Frame(_) => {}
                Effect::Flag(field) => *field(&mut f) = true,
            }
        }
        Ok(f)
    }

    /// A hello whose `protocol` is not the integer 1: the sim then only
    /// counts the bytes the client writes.
    pub fn bad_protocol(&self) -> bool {
        self.protocol_2 || self.protocol_string || self.protocol_missing || self.protocol_float || self.protocol_true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_switch_turns_on_its_own_fault() {
        let mut seen_frames = Vec::new();
        for s in SWITCHES {
            assert_eq!(SWITCHES.iter().filter(|o| o.name == s.name).count(), 1, "{} is listed once", s.name);
            let f = Faults::parse(s.name).unwrap();
            let flags = format!("{:?}", Faults { frame: Vec::new(), ..f });
            let on = flags.matches(": true").count();
            let f = Faults::parse(s.name).unwrap();
            match s.effect {
                Effect::Frame(ff) => {
                    assert_eq!((on, f.frame.as_slice()), (0, &[ff][..]), "{}", s.name);
                    assert!(!seen_frames.contains(&ff), "{} has a frame fault of its own", s.name);
                    seen_frames.push(ff);
                }
                Effect::Flag(_) => {
                    assert_eq!((on, f.frame.len()), (1, 0), "{}", s.name);
                    assert!(flags.contains(&format!("{}: true", s.name)), "{} sets the field of its name", s.name);
                }
            }
        }
    }

    #[test]
    fn every_windows_meaning_is_of_a_switch() {
        for (name, _) in ON_WINDOWS {
            assert_eq!(SWITCHES.iter().filter(|s| s.name == *name).count(), 1, "{name}");
        }
    }

    #[test]
    fn switches_combine_and_frame_faults_keep_their_order() {
        let f = Faults::parse(" seq_gap, ignore_eof,,blank_line,seq_gap ").unwrap();
        assert!(f.ignore_eof && !f.ignore_detach);
        assert_eq!(f.frame, [FrameFault::SeqGap, FrameFault::BlankLine]);
    }

    #[test]
    fn an_unknown_switch_names_every_valid_one() {
        let err = Faults::parse("crlf,ignore_eoff").unwrap_err();
        assert!(err.contains("`ignore_eoff`"), "{err}");
        for s in SWITCHES {
            assert!(err.contains(s.name), "{err} lists {}", s.name);
        }
    }
}
