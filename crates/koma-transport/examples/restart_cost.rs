//! What the I/O threads' start and end cost: a client's first call (spawn to
//! hello) when no client runs, so that the threads start for it, against the
//! same with another client holding them; the close of the last client
//! (which waits for the threads' end) against the close of one of two; and
//! a lease alone, taken (the threads start) and let go (they end, waited
//! for), against one taken and let go beside another. The two sides of each pair alternate, round by
//! round; the figures are medians, in microseconds.
//!
//!     cargo run --release -p koma-transport --example restart_cost -- bin/koma-sim [rounds]

use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use koma_transport::child::LaunchOptions;
use koma_transport::runtime::{running, settle, Lease};
use koma_transport::{Closing, Connection, ConnectionOptions, Outcome, Probe, Waker};

#[derive(Default)]
struct Wakes {
    count: Mutex<u64>,
    cv: Condvar,
}

struct Wake(Arc<Wakes>);

impl Waker for Wake {
    fn wake(&self) {
        *self.0.count.lock().unwrap() += 1;
        self.0.cv.notify_all();
    }
}

struct Client {
    conn: Connection,
    wakes: Arc<Wakes>,
    seen: u64,
}

impl Client {
    fn new(sim: &str) -> Client {
        let wakes = Arc::new(Wakes::default());
        let env = vec![("KOMA_SIM_DELAY_MS".into(), "0".into())];
        let launch = LaunchOptions { executable: sim.into(), env, ..Default::default() };
        let conn = Connection::new(ConnectionOptions { launch, ..Default::default() }, Box::new(Wake(wakes.clone())));
        Client { conn, wakes, seen: 0 }
    }

    /// Wait for the completion of `token`.
    fn wait(&mut self, token: u64) -> Outcome {
        loop {
            if let Some(c) = self.conn.drain().into_iter().find(|c| c.token == token) {
                return c.outcome;
            }
            let mut n = self.wakes.count.lock().unwrap();
            while *n == self.seen {
                n = self.wakes.cv.wait(n).unwrap();
            }
            self.seen = *n;
        }
    }

    fn probe(&mut self) {
        let t = self.conn.token();
        if let Probe::Wait = self.conn.probe(t, None).expect("probe") {
            assert!(matches!(self.wait(t), Outcome::Hello(_)), "no hello");
        }
    }

    fn close(&mut self) {
        let t = self.conn.token();
        if self.conn.close(t) == Closing::Wait {
            assert!(matches!(self.wait(t), Outcome::Done));
        }
    }
}

fn micros(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sim = args.first().expect("the path of koma-sim").clone();
    let rounds: usize = args.get(1).map_or(200, |r| r.parse().expect("a number"));
    let (mut first_cold, mut first_warm, mut close_last, mut close_other) = (vec![], vec![], vec![], vec![]);
    let (mut take_cold, mut take_warm, mut let_go_cold, mut let_go_warm) = (vec![], vec![], vec![], vec![]);
    for round in 0..rounds + 10 {
        let keep = round % 2 == 1;
        let mut keeper = keep.then(|| {
            let mut k = Client::new(&sim);
            k.probe();
            k
        });
        assert_eq!(running(), keep);
        let mut c = Client::new(&sim);
        let t = Instant::now();
        c.probe();
        let first = micros(t);
        let t = Instant::now();
        c.close();
        let close = micros(t);
        let t = Instant::now();
        let lease = Lease::new();
        let taken = micros(t);
        let t = Instant::now();
        drop(lease);
        settle();
        let let_go = micros(t);
        if let Some(k) = keeper.as_mut() {
            k.close();
        }
        assert!(!running());
        if round < 10 {
            continue; // warming up
        }
        if keep {
            first_warm.push(first);
            close_other.push(close);
            take_warm.push(taken);
            let_go_warm.push(let_go);
        } else {
            first_cold.push(first);
            close_last.push(close);
            take_cold.push(taken);
            let_go_cold.push(let_go);
        }
    }
    println!("{rounds} rounds, alternating; medians in µs");
    println!(
        "  first call (spawn to hello): threads started for it {:>8.0}   threads running {:>8.0}",
        median(first_cold),
        median(first_warm)
    );
    println!(
        "  close():                     the last client        {:>8.0}   one of two      {:>8.0}",
        median(close_last),
        median(close_other)
    );
    println!(
        "  a lease taken:               the threads start      {:>8.0}   threads running {:>8.0}",
        median(take_cold),
        median(take_warm)
    );
    println!(
        "  a lease let go (and settle): the threads end        {:>8.0}   threads running {:>8.0}",
        median(let_go_cold),
        median(let_go_warm)
    );
}
