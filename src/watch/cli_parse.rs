//! The values of `headroom watch`'s options: intervals, durations,
//! percentages and sizes, each refused with a one-line reason. Durations go
//! through `humantime` (its compound forms), with the decimal forms it
//! refuses (`2.5s`) read here.

use std::time::Duration;

use crate::units::{BareNumber, parse_size};

/// A duration as people type it: humantime's forms (`100ms`, `1m 30s`,
/// `2h`, `1day`), and, which humantime refuses, a decimal number of a unit
/// (`2.5s`, `1.5h`, as `sleep` takes it) or of seconds (`2`).
fn duration(t: &str) -> std::result::Result<f64, String> {
    if let Ok(d) = humantime::parse_duration(t) {
        return Ok(d.as_secs_f64());
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{t}' is not a duration (try 100ms, 2.5s or 1m 30s)"))?;
    let mult = match unit.trim() {
        "ms" => 0.001,
        "s" | "" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => {
            return Err(format!(
                "unknown unit '{unit}' in '{t}' (use ms, s, m, h or d)"
            ));
        }
    };
    Ok(value * mult)
}

/// Parses `100ms`, `2s`, `1.5s`, `1m`, `1m 30s`; refuses zero, anything
/// under 10 ms and over an hour.
pub fn parse_interval(text: &str) -> std::result::Result<Duration, String> {
    let t = text.trim();
    let secs = duration(t)?;
    if secs <= 0.0 {
        return Err(format!("interval '{t}' must be above zero"));
    }
    if secs < 0.01 {
        return Err(format!(
            "interval '{t}' is below 10ms: sampling that often costs more than it shows"
        ));
    }
    if secs > 3600.0 {
        return Err(format!("interval '{t}' is over an hour"));
    }
    Ok(Duration::from_secs_f64(secs))
}

pub(super) fn parse_limit(text: &str) -> std::result::Result<u64, String> {
    let b = parse_size(text, BareNumber::Refuse)?;
    if b < (1 << 20) {
        return Err(format!("size '{text}' is below 1 MiB"));
    }
    Ok(b)
}

pub(super) fn parse_percent(text: &str) -> std::result::Result<f64, String> {
    let v: f64 = text
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("'{text}' is not a percentage (try 80,90)"))?;
    if !(1.0..=100.0).contains(&v) {
        return Err(format!(
            "threshold '{text}' must be between 1 and 100 percent"
        ));
    }
    Ok(v)
}

/// Like [`parse_interval`] but allows hours and days and zero (`0`: keep
/// every sample for the whole run).
pub(super) fn parse_span(text: &str) -> std::result::Result<Duration, String> {
    let t = text.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    let secs = duration(t)?;
    if !(0.0..=3650.0 * 86400.0).contains(&secs) {
        return Err(format!("duration '{t}' is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}
