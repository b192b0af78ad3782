//! The run's figures: what every case added, and how they are printed.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::case::Case;
use crate::plan::{Op, Phase};

#[derive(Default)]
pub struct Totals {
    pub cases: u64,
    by_phase: BTreeMap<Phase, u64>,
    not_reached: BTreeMap<Phase, u64>,
    by_op: BTreeMap<Op, (u64, u64)>,
    by_op_count: BTreeMap<usize, u64>,
    outcomes: BTreeMap<String, u64>,
    refusals: BTreeMap<String, u64>,
    coverage: BTreeMap<&'static str, u64>,
    pub identified: u64,
    pub sampled: u64,
    internal: u64,
    abandoned_delivered: u64,
    events_taken: u64,
    overflows: u64,
    close_sum: Duration,
    close_max: Duration,
    close_n: u64,
    /// The slowest closes: (time, a description of the case), slowest first.
    slowest: Vec<(Duration, String)>,
    pub failures: Vec<String>,
    pub failed_cases: u64,
    /// Errors by kind (numbers masked), with the seed of a case that shows each.
    error_kinds: BTreeMap<String, (u64, u64)>,
}

impl Totals {
    pub fn add(&mut self, case: &Case) {
        self.cases += 1;
        *self.by_phase.entry(case.plan.phase).or_default() += 1;
        if !case.stats.reached {
            *self.not_reached.entry(case.plan.phase).or_default() += 1;
        }
        *self.by_op_count.entry(case.plan.ops.len()).or_default() += 1;
        for (op, applied) in &case.stats.ops {
            let e = self.by_op.entry(*op).or_default();
            e.0 += 1;
            e.1 += u64::from(*applied);
        }
        for (k, v) in &case.stats.outcomes {
            *self.outcomes.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &case.stats.refusals {
            *self.refusals.entry(k.clone()).or_default() += v;
        }
        *self.coverage.entry(case.stats.coverage).or_default() += 1;
        self.identified += u64::from(case.stats.identified);
        self.sampled += u64::from(case.seed.is_multiple_of(8) && case.stats.coverage == "pidfd and pipes");
        self.internal += case.stats.internal;
        self.abandoned_delivered += case.stats.abandoned_delivered;
        self.events_taken += case.stats.events_taken;
        self.overflows += case.stats.overflows;
        if let Some(d) = case.stats.close_time {
            self.close_sum += d;
            self.close_max = self.close_max.max(d);
            self.close_n += 1;
            if self.slowest.len() < 5 || d > self.slowest[4].0 {
                let p = &case.plan;
                let what = format!(
                    "KOMA_SM_SEED={:#x}: {:?} {:?}, fault {:?}, spawn_tool {}, ops {:?}",
                    case.seed, p.phase, p.variant, p.fault, p.spawn_tool, p.ops
                );
                self.slowest.push((d, what));
                self.slowest.sort_by_key(|s| std::cmp::Reverse(s.0));
                self.slowest.truncate(5);
            }
        }
        for e in &case.errors {
            let k = error_kind(e);
            self.error_kinds.entry(k).or_insert((0, case.seed)).0 += 1;
        }
        if !case.errors.is_empty() {
            self.failed_cases += 1;
            if self.failures.len() < 20 {
                self.failures.push(case.report());
            }
        }
    }
}

impl Totals {
    /// The run's figures, on stderr.
    pub fn print(&self, threads: usize, elapsed: Duration) {
        let t = self;
        let rate = t.cases as f64 / elapsed.as_secs_f64();
        eprintln!(
            "state_machine: {} cases in {:.1} s ({rate:.0} cases/s) on {threads} threads",
            t.cases,
            elapsed.as_secs_f64()
        );
        eprintln!(
            "  CPU: this process {:.1} s, the children (koma-sim and its tools) {:.1} s",
            cpu_seconds(libc::RUSAGE_SELF),
            cpu_seconds(libc::RUSAGE_CHILDREN)
        );
        eprintln!("  phases: {}", list(&t.by_phase, |(p, n)| format!("{p:?} {n}")));
        if !t.not_reached.is_empty() {
            eprintln!("  phase not reached: {}", list(&t.not_reached, |(p, n)| format!("{p:?} {n}")));
        }
        eprintln!("  operations per case: {}", list(&t.by_op_count, |(k, n)| format!("{k}: {n}")));
        eprintln!("  operations (planned / taken effect): {}", list(&t.by_op, |(o, (n, a))| format!("{o:?} {n}/{a}")));
        eprintln!("  completions: {}", list(&t.outcomes, |(k, n)| format!("{k} {n}")));
        eprintln!("  refused at once: {}", list(&t.refusals, |(k, n)| format!("{k} {n}")));
        eprintln!(
            "  abandoned calls whose completion was queued before the abandon: {}; close's own detach completions: {}; events taken: {}, overflow reports: {}",
            t.abandoned_delivered, t.internal, t.events_taken, t.overflows
        );
        eprintln!(
            "  child checks: {}; the connection's pidfd and pipes found in this process while the child ran: {} of {} cases looked at",
            list(&t.coverage, |(k, n)| format!("{k} {n}")),
            t.identified,
            t.sampled
        );
        if t.close_n > 0 {
            eprintln!(
                "  close, from the first close() to its completion drained: mean {:.2} ms, max {:.1} ms",
                t.close_sum.as_secs_f64() * 1000.0 / t.close_n as f64,
                t.close_max.as_secs_f64() * 1000.0
            );
            for (d, what) in &t.slowest {
                eprintln!("    {:>8.1} ms  {what}", d.as_secs_f64() * 1000.0);
            }
        }
    }

    /// The failed cases (at most 20) and the errors by kind, on stderr.
    pub fn print_failures(&self) {
        let t = self;
        for f in &t.failures {
            eprintln!("\n{f}");
        }
        if !t.error_kinds.is_empty() {
            eprintln!("\nstate_machine: {} failed cases; errors by kind (count, a case's seed):", t.failed_cases);
            for (k, (n, seed)) in &t.error_kinds {
                eprintln!("  {n:>6}  KOMA_SM_SEED={seed:#x}  {k}");
            }
        }
    }
}

/// Each item as `each` shows it, comma-separated.
fn list<T>(items: impl IntoIterator<Item = T>, each: impl Fn(T) -> String) -> String {
    items.into_iter().map(each).collect::<Vec<_>>().join(", ")
}

/// An error's message with its numbers masked, to count errors by kind.
fn error_kind(e: &str) -> String {
    let mut k = String::new();
    let mut digits = false;
    for ch in e.chars().take(240) {
        if ch.is_ascii_digit() {
            if !digits {
                k.push('#');
            }
            digits = true;
        } else {
            digits = false;
            k.push(ch);
        }
    }
    k
}

/// User plus system time, in seconds.
fn cpu_seconds(who: libc::c_int) -> f64 {
    // SAFETY: getrusage fills a zeroed rusage (plain data).
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut ru);
        ru
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}
