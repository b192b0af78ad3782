//! What a spawn costs, by method, in a parent that looks like a busy host
//! process (a language runtime with a large touched heap and many threads): `fork` (std's `Command`
//! with a `pre_exec` hook, as the supervisor used before), `posix_spawn`
//! (std's `Command` without a hook: glibc's vfork-style clone, but no way to
//! set the parent-death signal), and this crate's spawner (`child::launch`:
//! one spawner thread) in each spawn mode: `clone(CLONE_VM | CLONE_VFORK |
//! CLONE_PIDFD)`, the same clone without a pidfd, and the portable path.
//!
//!     cargo run --release -p koma-transport --example spawn_cost -- [MiB] [threads] [spawns]
//!
//! Each spawn runs `/bin/true sdk serve` and waits for it; the figure is the
//! median time per spawn + wait, in microseconds.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Instant;

use koma_transport::child::{self, LaunchOptions, SpawnMode};
use koma_transport::runtime::Lease;

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("a number")).collect();
    let mib = args.first().copied().unwrap_or(512);
    let threads = args.get(1).copied().unwrap_or(1000);
    let spawns = args.get(2).copied().unwrap_or(300);

    // The parent's weight: a touched heap, and idle threads (each a stack mapping).
    let heap: Vec<u8> = vec![1u8; mib << 20];
    let idle: Vec<_> = (0..threads)
        .map(|_| std::thread::Builder::new().stack_size(256 << 10).spawn(std::thread::park).expect("thread"))
        .collect();

    let median = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    let time = |f: &dyn Fn()| {
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64() * 1e6
    };
    let command = || {
        let mut c = Command::new("/bin/true");
        c.args(["sdk", "serve"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
        c
    };
    let fork = |()| {
        let mut c = command();
        // SAFETY: an empty hook: it only forces std to fork instead of posix_spawn.
        unsafe { c.pre_exec(|| Ok(())) };
        c.spawn().expect("spawn").wait().expect("wait");
    };
    let posix_spawn = |()| {
        command().spawn().expect("spawn").wait().expect("wait");
    };
    // Held for the whole run: the I/O threads run while a lease is held.
    let lease = Lease::new();
    let spawner = lease.spawner().expect("the spawner thread");
    let launch = |spawn: SpawnMode| {
        lease.handle().block_on(async {
            let options = LaunchOptions { executable: "/bin/true".into(), cwd: None, env: Vec::new(), spawn };
            let Ok(spawned) = child::launch(&spawner, options).await else { panic!("launch failed") };
            spawned.process.exited().await;
            spawned.process.reap();
        })
    };
    let clone = |()| launch(SpawnMode::Auto);
    let clone_no_pidfd = |()| launch(SpawnMode::NoPidfd);
    let portable = |()| launch(SpawnMode::Portable);
    println!(
        "parent: {mib} MiB touched, {threads} idle threads, {spawns} spawns per method (median µs per spawn + wait)"
    );
    for round in 0..2 {
        for (name, f) in [
            ("fork (pre_exec)", &fork as &dyn Fn(())),
            ("posix_spawn", &posix_spawn),
            ("koma spawner (clone VM|VFORK|PIDFD)", &clone),
            ("koma spawner (clone VM|VFORK)", &clone_no_pidfd),
            ("koma spawner (portable: posix_spawn)", &portable),
        ] {
            let samples: Vec<f64> = (0..spawns).map(|_| time(&|| f(()))).collect();
            if round == 1 {
                println!("  {name:<38} {:>8.0} µs", median(samples));
            }
        }
    }
    drop(heap);
    drop(idle);
}
