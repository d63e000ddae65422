//! How far a fitted change can be trusted: its standard error, the larger
//! of two readings. One is the residuals' spread (at least the spread of a
//! phase peak between runs of the same command) through the normal
//! equations; the other is how much the change moves when each run in turn
//! is left out (the jackknife): two runs that pull a coefficient opposite
//! ways leave it undetermined however well their average fits.

use super::columns::Columns;
use super::ridge;

/// A phase peak's spread between runs of the same command on this machine
/// (README "Probing your own job": 0.3 % to 3.5 % between three runs of a
/// variant); the residuals stand in when larger.
pub const NOISE: f64 = 0.02;

/// The rows of `cols` and columns `keep`, without the rows of run `left_out`.
fn system(cols: &Columns, keep: &[usize], left_out: Option<usize>) -> (Vec<Vec<f64>>, Vec<f64>) {
    cols.rows
        .iter()
        .zip(cols.a.iter().zip(&cols.b))
        .filter(|(r, _)| Some(r.run) != left_out)
        .map(|(_, (a, b))| (keep.iter().map(|&j| a[j]).collect(), *b))
        .unzip()
}

/// The least-squares step of the columns `keep` (ridge `lambda`).
pub fn solve(cols: &Columns, keep: &[usize], lambda: f64) -> Vec<f64> {
    let (a, b) = system(cols, keep, None);
    ridge::solve(&a, &b, lambda)
}

/// Standard error of each entry of `step` (the solution for `keep`), over
/// `runs` runs, in the columns' own scale.
pub fn standard_errors(
    cols: &Columns,
    keep: &[usize],
    step: &[f64],
    runs: usize,
    lambda: f64,
) -> Vec<f64> {
    let (a, b) = system(cols, keep, None);
    let rss: f64 = a
        .iter()
        .zip(&b)
        .map(|(r, y)| (y - r.iter().zip(step).map(|(a, x)| a * x).sum::<f64>()).powi(2))
        .sum();
    let dof = a.len().saturating_sub(keep.len()).max(1) as f64;
    let s2 = (rss / dof).max(NOISE * NOISE);
    let var = ridge::inverse_diagonal(&a, lambda);
    // One run left out at a time; with a single run there is no other to
    // compare with, and the residuals' reading stands alone.
    let present: Vec<usize> = (0..runs)
        .filter(|&r| cols.rows.iter().any(|row| row.run == r))
        .collect();
    let left_out: Vec<Vec<f64>> = if present.len() < 2 {
        Vec::new()
    } else {
        present
            .iter()
            .map(|&r| {
                let (a, b) = system(cols, keep, Some(r));
                ridge::solve(&a, &b, lambda)
            })
            .collect()
    };
    let n = left_out.len() as f64;
    (0..keep.len())
        .map(|i| {
            let mean = left_out.iter().map(|x| x[i]).sum::<f64>() / n.max(1.0);
            let jack = (n - 1.0) / n.max(1.0)
                * left_out.iter().map(|x| (x[i] - mean).powi(2)).sum::<f64>();
            (s2 * var[i]).max(jack).sqrt()
        })
        .collect()
}
