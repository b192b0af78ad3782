//! koma-sim: a deterministic stand-in for `koma sdk serve` (Koma SDK
//! protocol 1, server side). See README.md for the agent's rules, the
//! environment variables, the fault switches and bench mode.

mod agent;
mod config;
mod output;
mod server;

const USAGE: &str = "\
usage: koma-sim sdk serve     speak Koma SDK protocol 1 on stdin/stdout
       koma-sim --version     print the version
       koma-sim --help        print this help

environment:
  KOMA_SIM_HOME       where sessions are saved (default $XDG_STATE_HOME/koma-sim
                      or ~/.local/state/koma-sim)
  KOMA_SIM_DELAY_MS   delay before each streamed step of a turn (default 120)
  KOMA_SIM_HELLO_DELAY_MS  wait this long before hello; the end of stdin
                      cuts the wait short (default 0)
  KOMA_SIM_FAULT      comma-separated fault switches (see README.md)
  KOMA_SIM_BENCH      1 adds the bench methods (bench_events, bench_blob,
                      bench_exit, bench_garbage)
";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["--version"] | ["-V"] => {
            println!("koma-sim {}", env!("CARGO_PKG_VERSION"));
            std::process::exit(0);
        }
        ["--help"] | ["-h"] => {
            print!("{USAGE}");
            std::process::exit(0);
        }
        ["sdk", "serve"] => {}
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
