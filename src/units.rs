//! Byte sizes as people write them on clusters, and as headroom prints them.
//!
//! Outside Slurm's own options a letter is binary (`256G` is 256 GiB, as
//! Slurm reads it) and explicit units mean what they say: `GB` is 10^9 bytes,
//! `GiB` is 2^30. A bare number is ambiguous and refused, in job YAML too
//! (`host: 256` could be bytes, MiB or GiB). Slurm's `--mem` family has its
//! own exact rules, ported in [`slurm`]. [`fmt_bytes`] is the one formatter
//! every report prints sizes with (and [`fmt_delta`] through it); the only
//! other, `alloc::rules::format_size`, exists to reproduce PyTorch's OOM
//! message byte for byte and is used for nothing else.

pub mod slurm;

pub use slurm::parse_slurm_mem;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

const KI: u64 = 1 << 10;

/// Largest size headroom accepts anywhere: 1 EiB. Anything above is a typo.
pub const MAX_BYTES: u64 = 1 << 60;

/// How a number without a unit is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BareNumber {
    /// Refuse it: the caller must say which unit.
    Refuse,
    /// Plain bytes.
    Bytes,
}

/// Parses `256G`, `256GiB`, `64M`, `1.5T`, `80GB`, `512MiB`, `1024` (per `bare`).
pub fn parse_size(text: &str, bare: BareNumber) -> Result<u64, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty size".into());
    }
    if s.starts_with('-') {
        return Err(format!("size '{s}' is negative"));
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (try 256G, 64MiB or 80GB)"))?;
    let unit = unit.trim();
    let mult: f64 = match unit.to_ascii_lowercase().as_str() {
        "" => match bare {
            BareNumber::Bytes => 1.0,
            BareNumber::Refuse => {
                return Err(format!(
                    "size '{s}' has no unit: write {s}G (GiB, as Slurm reads it), {s}GB or {s}M"
                ));
            }
        },
        "b" => 1.0,
        "k" | "kib" | "ki" => KI as f64,
        "m" | "mib" | "mi" => (KI.pow(2)) as f64,
        "g" | "gib" | "gi" => (KI.pow(3)) as f64,
        "t" | "tib" | "ti" => (KI.pow(4)) as f64,
        "p" | "pib" | "pi" => (KI.pow(5)) as f64,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        "pb" => 1e15,
        _ => return Err(format!("unknown unit '{unit}' in size '{s}'")),
    };
    let bytes = value * mult;
    if !bytes.is_finite() || bytes > MAX_BYTES as f64 {
        return Err(format!("size '{s}' is absurdly large (over 1 EiB)"));
    }
    Ok(bytes.round() as u64)
}

/// Today's date in UTC as YYYY-MM-DD (for provenance records).
pub fn utc_date_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    civil_date(secs / 86_400)
}

/// YYYY-MM-DD of the day `days` after 1970-01-01 (Howard Hinnant's algorithm).
pub fn civil_date(days: u64) -> String {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Formats bytes for people: binary units, three significant figures.
pub fn fmt_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{bytes} B")
    } else if v >= 100.0 {
        format!("{v:.0} {}", UNITS[i])
    } else if v >= 10.0 {
        format!("{v:.1} {}", UNITS[i])
    } else {
        format!("{v:.2} {}", UNITS[i])
    }
}

/// Formats a signed difference (`+1.2 GiB`, `-40 GiB`).
pub fn fmt_delta(delta: i128) -> String {
    let sign = if delta < 0 { "-" } else { "+" };
    format!(
        "{sign}{}",
        fmt_bytes(delta.unsigned_abs().min(u64::MAX as u128) as u64)
    )
}

/// A byte count that reads from YAML as `256G` / `64MiB` / `80GB` / `4096B`;
/// a bare number is refused with the units it could mean. It writes as a
/// string with its unit (`256GiB`, `4097B`), so what headroom writes reads back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(pub u64);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = self.0;
        let text = match n.trailing_zeros() {
            _ if n == 0 => "0B".to_string(),
            40.. => format!("{}TiB", n >> 40),
            30.. => format!("{}GiB", n >> 30),
            20.. => format!("{}MiB", n >> 20),
            10.. => format!("{}KiB", n >> 10),
            _ => format!("{n}B"),
        };
        s.serialize_str(&text)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(i64),
            Float(f64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(i) if i < 0 => Err(serde::de::Error::custom(format!("size {i} is negative"))),
            // A bare 256 meant as GiB would be read as 256 bytes and every
            // job would "not fit": refuse it and name the units instead.
            Raw::Int(i) => Err(serde::de::Error::custom(format!(
                "size {i} has no unit: write {i}G (GiB), {i}GB (10^9 bytes), {i}M (MiB) or {i}B (bytes)"
            ))),
            Raw::Float(f) => Err(serde::de::Error::custom(format!(
                "size {f} needs a unit, e.g. {f}G"
            ))),
            Raw::Text(t) => parse_size(&t, BareNumber::Bytes)
                .map(Bytes)
                .map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_letters_are_binary() {
        assert_eq!(parse_size("256G", BareNumber::Refuse), Ok(256 << 30));
        assert_eq!(parse_size("64M", BareNumber::Refuse), Ok(64 << 20));
        assert_eq!(parse_size("1.5T", BareNumber::Refuse), Ok(3 << 39));
    }

    #[test]
    fn explicit_units_mean_what_they_say() {
        assert_eq!(parse_size("80GB", BareNumber::Refuse), Ok(80_000_000_000));
        assert_eq!(parse_size("80GiB", BareNumber::Refuse), Ok(80 << 30));
        assert_eq!(parse_size("512 MiB", BareNumber::Refuse), Ok(512 << 20));
    }

    #[test]
    fn bare_numbers_follow_the_context() {
        assert_eq!(parse_size("4000", BareNumber::Bytes), Ok(4000));
        assert!(
            parse_size("4000", BareNumber::Refuse)
                .unwrap_err()
                .contains("no unit")
        );
    }

    #[test]
    fn bad_sizes_are_refused_with_the_reason() {
        assert!(
            parse_size("-5G", BareNumber::Refuse)
                .unwrap_err()
                .contains("negative")
        );
        assert!(
            parse_size("5Q", BareNumber::Refuse)
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(
            parse_size("9999999P", BareNumber::Refuse)
                .unwrap_err()
                .contains("absurd")
        );
        assert!(parse_size("G", BareNumber::Refuse).is_err());
        assert!(parse_size("", BareNumber::Refuse).is_err());
    }

    #[test]
    fn civil_dates_by_hand() {
        assert_eq!(civil_date(0), "1970-01-01");
        // 2000-03-01 is day 11,017; 2026-11-23 is day 20,780.
        assert_eq!(civil_date(11_017), "2000-03-01");
        assert_eq!(civil_date(20_780), "2026-11-23");
    }

    #[test]
    fn formatting_keeps_three_figures() {
        assert_eq!(fmt_bytes(512), "512 B");
        assert_eq!(fmt_bytes(1536), "1.50 KiB");
        assert_eq!(fmt_bytes(256 << 30), "256 GiB");
        assert_eq!(fmt_bytes(56_862_697_472), "53.0 GiB");
        assert_eq!(fmt_delta(-(40i128 << 30)), "-40.0 GiB");
    }

    #[test]
    fn yaml_sizes_deserialize() {
        let b: Bytes = crate::yaml::from_str("256G").unwrap();
        assert_eq!(b, Bytes(256 << 30));
        let b: Bytes = crate::yaml::from_str("1024B").unwrap();
        assert_eq!(b, Bytes(1024));
        assert!(crate::yaml::from_str::<Bytes>("-3").is_err());
        let err = crate::yaml::from_str::<Bytes>("256")
            .unwrap_err()
            .to_string();
        assert!(err.contains("no unit") && err.contains("256G"), "{err}");
    }

    #[test]
    fn written_sizes_read_back() {
        for n in [0, 1, 4097, 64 << 20, 256 << 30, (3 << 40) + (1 << 30)] {
            let text = crate::yaml::to_string(&Bytes(n)).unwrap();
            assert_eq!(
                crate::yaml::from_str::<Bytes>(&text).unwrap(),
                Bytes(n),
                "{text}"
            );
        }
    }
}
