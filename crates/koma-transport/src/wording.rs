//! How a host's users spell option names and durations, so that the core's
//! messages read as their own code does: `onApproval` and `200 ms` for one
//! host, `on_approval` and `0.2 s` for another.

use std::borrow::Cow;
use std::time::Duration;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wording {
    pub naming: Naming,
    pub durations: DurationUnit,
}

/// How option names are spelled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Naming {
    /// `onApproval`.
    #[default]
    Camel,
    /// `on_approval`.
    Snake,
}

/// The unit durations are given in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DurationUnit {
    #[default]
    Milliseconds,
    Seconds,
}

impl Wording {
    /// An option's name, given in snake case, as the host's users spell it.
    pub fn option(&self, snake: &'static str) -> Cow<'static, str> {
        match self.naming {
            Naming::Snake => Cow::Borrowed(snake),
            Naming::Camel => {
                let mut out = String::with_capacity(snake.len());
                let mut upper = false;
                for c in snake.chars() {
                    if c == '_' {
                        upper = true;
                    } else if upper {
                        out.extend(c.to_uppercase());
                        upper = false;
                    } else {
                        out.push(c);
                    }
                }
                Cow::Owned(out)
            }
        }
    }

    /// `d` in the host's unit: `1500 ms`, or `1.5 s`.
    pub fn duration(&self, d: Duration) -> String {
        match self.durations {
            DurationUnit::Milliseconds => format!("{} ms", d.as_millis()),
            DurationUnit::Seconds => format!("{} s", d.as_secs_f64()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_and_durations_in_each_spelling() {
        let camel = Wording::default();
        let snake = Wording { naming: Naming::Snake, durations: DurationUnit::Seconds };
        assert_eq!(camel.option("on_approval"), "onApproval");
        assert_eq!(camel.option("mode"), "mode");
        assert_eq!(snake.option("on_approval"), "on_approval");
        assert_eq!(camel.duration(Duration::from_millis(200)), "200 ms");
        assert_eq!(snake.duration(Duration::from_millis(200)), "0.2 s");
        assert_eq!(snake.duration(Duration::from_secs(7)), "7 s");
    }
}
