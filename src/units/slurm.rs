//! Memory sizes exactly as Slurm reads them in `--mem`, `--mem-per-cpu` and
//! `--mem-per-gpu`: a port of `str_to_mbytes` in SchedMD/slurm
//! `src/common/proc_args.c` (read at commit 284c3b95, 2026-08). Slurm's rules
//! differ from the usual ones, which is why they live apart from
//! [`super::parse_size`]: the number is a whole decimal (`strtoll`, so no
//! `1.5G`), the only suffixes are K, M, G and T in either case, each
//! optionally followed by one `B`, and all are binary: `256GB` is 256 GiB,
//! not 256·10^9. No suffix is MiB. K rounds up to whole MiB. Anything else
//! (`256GiB`, `1P`, `-5G`, `8 G`) is what sbatch answers with
//! "Invalid --mem specification", and headroom refuses it the same way.

use super::MAX_BYTES;
use crate::limits::MAX_MEMORY_BYTES;

const MIB: u64 = 1 << 20;

/// Where Slurm's rule is written, for error messages.
const SOURCE: &str = "Slurm's str_to_mbytes, src/common/proc_args.c";

/// Bytes `text` asks for, as sbatch reads `--mem=text`; `0` stays 0 (the
/// whole node: the caller decides what that means).
pub fn parse_slurm_mem(text: &str) -> Result<u64, String> {
    // strtoll skips leading white space and takes one sign.
    let s = text.trim_start();
    let digits_from = usize::from(s.starts_with('+'));
    if s.starts_with('-') {
        return Err(format!("'{text}' is negative: sbatch refuses it"));
    }
    let body = &s[digits_from..];
    let end = body
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(body.len());
    let (num, suffix) = body.split_at(end);
    if num.is_empty() {
        return Err(refusal(text));
    }
    // Past i64 strtoll saturates and Slurm answers NO_VAL; past 1 EiB it is a typo anyway.
    let n: u64 = num.parse().map_err(|_| too_large(text))?;
    let mib = match suffix.as_bytes() {
        [] => n,
        [unit] | [unit, b'b' | b'B'] => match unit.to_ascii_lowercase() {
            b'k' => n.div_ceil(1024),
            b'm' => n,
            b'g' => n.checked_mul(1024).ok_or_else(|| too_large(text))?,
            b't' => n.checked_mul(1 << 20).ok_or_else(|| too_large(text))?,
            _ => return Err(refusal(text)),
        },
        _ => return Err(refusal(text)),
    };
    match mib.checked_mul(MIB) {
        Some(bytes) if bytes > MAX_MEMORY_BYTES && bytes <= MAX_BYTES => {
            Err(more_than_a_node(text, suffix.is_empty().then_some(n)))
        }
        Some(bytes) if bytes <= MAX_BYTES => Ok(bytes),
        _ => Err(too_large(text)),
    }
}

/// Over a pebibyte per node: sbatch takes it and no node has it. A bare
/// number that large is usually bytes, which sbatch reads as MiB.
fn more_than_a_node(text: &str, bare: Option<u64>) -> String {
    let head = format!("'{text}' is over 1 PiB per node, which no node has");
    match bare {
        Some(n) => format!(
            "{head}: a number without a unit is MiB, as sbatch reads it; as bytes it would be \
             {} (write {}G)",
            super::fmt_bytes(n),
            n >> 30
        ),
        None => head,
    }
}

fn refusal(text: &str) -> String {
    format!(
        "'{text}' is not a size sbatch accepts: a whole number with an optional K, M, G or T \
         (binary; a B after it changes nothing), no unit meaning MiB ({SOURCE})"
    )
}

fn too_large(text: &str) -> String {
    format!("size '{text}' is absurdly large (over 1 EiB)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_with_or_without_b_are_binary() {
        assert_eq!(parse_slurm_mem("256G"), Ok(256 << 30));
        assert_eq!(parse_slurm_mem("256GB"), Ok(256 << 30));
        assert_eq!(parse_slurm_mem("256gb"), Ok(256 << 30));
        assert_eq!(parse_slurm_mem("2T"), Ok(2 << 40));
        assert_eq!(parse_slurm_mem("64m"), Ok(64 << 20));
        assert_eq!(parse_slurm_mem("+8G"), Ok(8 << 30));
    }

    #[test]
    fn no_unit_is_mebibytes_and_kilobytes_round_up() {
        assert_eq!(parse_slurm_mem("4000"), Ok(4000 << 20));
        assert_eq!(parse_slurm_mem("1K"), Ok(1 << 20));
        assert_eq!(parse_slurm_mem("2049kb"), Ok(3 << 20));
        assert_eq!(parse_slurm_mem("0"), Ok(0));
    }

    #[test]
    fn what_sbatch_refuses_is_refused() {
        for bad in [
            "1.5G", "256GiB", "1P", "-5G", "8 G", "G", "", "12GBB", "5Q", "0x10",
        ] {
            let err = parse_slurm_mem(bad).unwrap_err();
            assert!(
                err.contains("sbatch") || err.contains("negative"),
                "{bad}: {err}"
            );
        }
        assert!(
            parse_slurm_mem("99999999999T")
                .unwrap_err()
                .contains("absurd")
        );
    }

    #[test]
    fn bytes_given_where_sbatch_reads_mebibytes_are_refused_with_the_fix() {
        // 256 GB written in bytes: sbatch would read 238 PiB.
        let err = parse_slurm_mem("256000000000").unwrap_err();
        assert!(err.contains("over 1 PiB per node"), "{err}");
        assert!(err.contains("write 238G"), "{err}");
        assert!(!parse_slurm_mem("2048T").unwrap_err().contains("write"));
        // The largest real nodes (tens of TiB) still pass, in MiB and in T.
        assert_eq!(parse_slurm_mem("33554432"), Ok(32 << 40));
        assert_eq!(parse_slurm_mem("1024T"), Ok(1 << 50));
    }
}
