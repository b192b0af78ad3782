//! koma-sim: a deterministic stand-in for `koma sdk serve` (Koma SDK
//! protocol 1, server side), with fault switches for client tests and a
//! bench mode. `koma-sim --help` lists the environment and every switch.

// Every unsafe block says why it is sound.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

mod agent;
mod capabilities;
mod config;
mod crash;
mod faults;
mod keyword;
mod output;
mod record;
mod scenario;
mod server;
mod session;
mod session_file;
mod step;
#[cfg(windows)]
mod windows;

const USAGE: &str = "\
usage: koma-sim sdk serve     speak Koma SDK protocol 1 on stdin/stdout
       koma-sim check-scenario
                              check the scenario on stdin; exit 0 if it is
                              good, else 64 with its first mistake as JSON
                              ({entry, field, problem}) on stdout
       koma-sim check-scenario --mistake POINTER PROBLEM
                              a mistake found by the program that built the
                              scenario on stdin, at POINTER (a JSON pointer):
                              exit 64 with it as JSON, its entry and field
                              named as koma-sim names them
       koma-sim --version     print the version
       koma-sim --help        print this help, with the fault switches
";

const ABOUT: &str = "
A deterministic stand-in for `koma sdk serve`. A text with \"read\", \"look\" or
\"show\" reads a file; one with \"fix\", \"edit\" or \"write\" asks to write one
and waits for `approve`. A scenario (KOMA_SIM_SCENARIO) scripts the turns and
answers instead. After detach, or at the end of stdin, it saves the session
and exits 0. Diagnostics go to stderr, prefixed `koma-sim: `.

environment:
  KOMA_SIM_HOME       where sessions are saved (default <tmp>/koma-sim, the
                      system's temporary directory: $TMPDIR, else /tmp)
  KOMA_SIM_SAVE       0 keeps sessions in memory only (nothing is written;
                      a session cannot be resumed) (default 1)
  KOMA_SIM_DELAY_MS   delay before each streamed step of a turn (default 120)
  KOMA_SIM_HELLO_DELAY_MS  wait this long before hello; the end of stdin
                      cuts the wait short (default 0)
  KOMA_SIM_FAULT      comma-separated fault switches (below); an unknown one
                      exits 64
  KOMA_SIM_BENCH      1 adds the bench methods (bench_events, bench_blob,
                      bench_exit, bench_garbage) and the turn text
                      `bench_turn N B` (N outputs of B bytes each)
  KOMA_SIM_SCENARIO   a scenario file (JSON): what each turn does, in place
                      of the keyword agent, and scripted answers to requests;
                      a mistake in it exits 64, naming the turn and the field
  KOMA_SIM_RECORD     a file that every request read is appended to, one
                      JSON line each ({n, pid, id, method, params})
  KOMA_SIM_PROGRESS   with a scenario, a file that keeps how far it has
                      played, shared by every koma-sim given the same path

fault switches (KOMA_SIM_FAULT=name,name,...):
";

/// The full help: usage, environment, and every fault switch by group.
fn help() -> String {
    let mut text = format!("{USAGE}{ABOUT}");
    for group in faults::Group::ALL {
        text.push_str(&format!("  {}:\n", group.heading()));
        for s in faults::SWITCHES.iter().filter(|s| s.group == group) {
            text.push_str(&format!("    {:<19} {}\n", s.name, s.about));
        }
    }
    text.push_str("\non Windows (no signals, process groups or `sleep`), these differ:\n");
    for (name, on) in faults::ON_WINDOWS {
        let what = match on {
            faults::OnWindows::Means(m) => m.to_string(),
            faults::OnWindows::Refused(why) => format!("refused (exits 64): {why}"),
        };
        text.push_str(&format!("    {name:<19} {what}\n"));
    }
    text
}

/// `koma-sim check-scenario`: the scenario on stdin checked; its first
/// mistake on stdout as JSON and on stderr as a line, exit 64.
/// With `mistake` (a pointer and a problem), the mistake is the caller's:
/// koma-sim names its entry and field.
fn check_scenario(mistake: Option<(&str, &str)>) -> ! {
    use std::io::Read;
    let mut text = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut text) {
        eprintln!("koma-sim: cannot read the scenario on stdin: {e}");
        std::process::exit(64);
    }
    let found = match mistake {
        None => scenario::check(&text),
        Some((pointer, problem)) => {
            let (entry, field) = scenario::name_place(&text, pointer);
            Err(scenario::Mistake { entry, field, problem: problem.to_string() })
        }
    };
    match found {
        Ok(()) => std::process::exit(0),
        Err(m) => {
            let json = serde_json::json!({"entry": m.entry, "field": m.field, "problem": m.problem});
            println!("{json}");
            eprintln!("koma-sim: bad scenario: {m}");
            std::process::exit(64);
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["--version"] | ["-V"] => {
            println!("koma-sim {}", env!("CARGO_PKG_VERSION"));
            std::process::exit(0);
        }
        ["--help"] | ["-h"] => {
            print!("{}", help());
            std::process::exit(0);
        }
        ["check-scenario"] => check_scenario(None),
        ["check-scenario", "--mistake", pointer, problem] => check_scenario(Some((pointer, problem))),
        ["sdk", "serve"] => {}
        // The tool of `spawn_tool` and `orphan_tool` on Windows, which has no `sleep`.
        #[cfg(windows)]
        ["sleep", seconds] => {
            std::thread::sleep(std::time::Duration::from_secs(seconds.parse().unwrap_or(3600)));
            std::process::exit(0);
        }
        _ => {
            eprint!("{USAGE}");
            std::process::exit(64);
        }
    }
    let cfg = match config::Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("koma-sim: {e}");
            std::process::exit(64);
        }
    };
    server::run(cfg)
}
