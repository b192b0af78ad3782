//! The run's knobs, read from the environment.

/// A number from the environment variable `name` (decimal, or hex after
/// `0x`; `_` allowed), if it is set.
pub fn env_num(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim().replace('_', "");
    let parsed = match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    Some(parsed.unwrap_or_else(|_| panic!("{name} must be a number, not {v:?}")))
}
