//! Where a calibration file enters: every coefficient is checked against
//! physical bounds before any estimator multiplies it, so no product
//! downstream can wrap (u64::MAX once made papers100M "fit" in 180 MiB) and
//! no NaN or negative reserve can reach a verdict. A file that fails gets
//! one line naming the coefficient, its value and the range it must lie in.

use std::path::Path;

use super::coefficients::{CalibrationFile, Coefficients};
use crate::error::{Error, Result};
use crate::limits::MAX_MEMORY_BYTES;

/// Checks `c`; the error names the first coefficient out of bounds
/// (each coefficient's bounds are the table's, `coeff_table::TABLE`).
pub fn validate(c: &Coefficients) -> std::result::Result<(), String> {
    super::coeff_table::check_bounds(c)
}

/// Parses and checks the text of a calibration file read from `path`.
pub fn parse_calibration(text: &str, path: &Path) -> Result<CalibrationFile> {
    let shown = crate::output::shown(&path.display().to_string());
    crate::spec::check_yaml_depth(text, &shown)?;
    let file: CalibrationFile = crate::yaml::from_str(text).map_err(|e| {
        Error::bad(format!(
            "{shown}: not a calibration file: {}",
            crate::output::shown_within(&e, 300)
        ))
    })?;
    validate(&file.coefficients).map_err(|e| Error::bad(format!("{shown}: {e}")))?;
    if let Some(g) = &file.gpu {
        for (name, v) in [
            ("gpu.total_bytes", g.total_bytes),
            ("gpu.nvml_peak_bytes", g.nvml_peak_bytes),
            ("gpu.predicted_peak_bytes", g.predicted_peak_bytes),
        ] {
            if v > MAX_MEMORY_BYTES {
                return Err(Error::bad(format!(
                    "{shown}: {name} = {v} bytes is over 1 PiB"
                )));
            }
        }
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<CalibrationFile> {
        parse_calibration(yaml, Path::new("cal.yaml"))
    }

    #[test]
    fn defaults_pass_and_extremes_are_refused_by_name() {
        assert_eq!(validate(&Coefficients::default()), Ok(()));
        let cases = [
            // The file of the issue: u64::MAX wrapped and papers100M fit in 180 MiB.
            ("runtime_bytes: 18446744073709551615", "runtime_bytes"),
            ("cuda_context_bytes: 1125899906842625", "cuda_context_bytes"),
            ("cpu_heap_small_tensors: .nan", "cpu_heap_small_tensors"),
            (
                "allocator_reserve_fraction: -0.5",
                "allocator_reserve_fraction",
            ),
            ("cpu_heap_large_shared: .inf", "cpu_heap_large_shared"),
            ("sort_bytes_per_element: 0", "sort_bytes_per_element"),
            ("sort_bytes_per_element: 100000", "sort_bytes_per_element"),
        ];
        for (line, name) in cases {
            let err = parse(&format!("coefficients:\n  {line}\n")).unwrap_err();
            assert!(err.to_string().contains(name), "{line}: {err}");
            assert_eq!(err.exit_code(), 2);
        }
        // Negative sizes never reach validation: serde refuses them for u64.
        assert!(parse("coefficients:\n  runtime_bytes: -1\n").is_err());
        assert!(parse("coefficients:\n  sort_bytes_per_element: 24\n").is_ok());
    }

    #[test]
    fn the_largest_coefficients_allowed_cannot_overflow_an_estimate() {
        // Every bound at its edge; under `cargo test` overflow checks are on,
        // so a product that wraps panics here.
        let p = MAX_MEMORY_BYTES;
        let c = Coefficients {
            runtime_bytes: p,
            runtime_file_bytes: p,
            worker_file_bytes: p,
            cuda_host_bytes: p,
            worker_private_bytes: p,
            idle_worker_private_bytes: p,
            cuda_context_bytes: p,
            sampler_bytes_per_node: 1 << 20,
            sort_bytes_per_element: 256,
            cpu_heap_small_tensors: 100.0,
            cpu_heap_large_tensors: 100.0,
            cpu_heap_small_eval_forked: 100.0,
            cpu_heap_large_eval_forked: 100.0,
            cpu_heap_small_shared: 100.0,
            cpu_heap_large_shared: 100.0,
            cpu_heap_large_shared_resident: 100.0,
            allocator_reserve_fraction: 100.0,
            build_heap_retained: 100.0,
            ..Coefficients::default()
        };
        assert_eq!(validate(&c), Ok(()));
        let spec = crate::spec::load("seed-001-attempt1").unwrap().spec;
        let job = crate::spec::Job::from_spec(&spec).unwrap();
        let est = super::super::estimate(&job, &job.settings, &c);
        let peak = crate::plan::verdict::peaks(&est).0;
        assert!(peak > 7 * p, "seven runtimes at least: {peak}");
    }
}
