//! Ridge-regularised least squares for calibrate's fit: a handful of
//! coefficients against a few dozen phase peaks, solved by Gaussian
//! elimination on the normal equations (a few unknowns: no library needed),
//! and the diagonal of their inverse, which sizes each coefficient's
//! uncertainty.

/// Solves (AᵀA + λI) x = Aᵀb by Gaussian elimination with partial pivoting.
pub fn solve(a: &[Vec<f64>], b: &[f64], lambda: f64) -> Vec<f64> {
    let n = a.first().map_or(0, Vec::len);
    let mut m = vec![vec![0.0; n + 1]; n];
    for i in 0..n {
        for j in 0..n {
            m[i][j] =
                a.iter().map(|r| r[i] * r[j]).sum::<f64>() + if i == j { lambda } else { 0.0 };
        }
        m[i][n] = a.iter().zip(b).map(|(r, y)| r[i] * y).sum();
    }
    for col in 0..n {
        let piv = (col..n)
            .max_by(|&x, &y| m[x][col].abs().total_cmp(&m[y][col].abs()))
            .unwrap_or(col);
        m.swap(col, piv);
        let d = m[col][col];
        if d.abs() < 1e-300 {
            continue;
        }
        let pivot = m[col].clone();
        for (r, row) in m.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / d;
                for (x, p) in row.iter_mut().zip(&pivot).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    (0..n)
        .map(|i| {
            if m[i][i].abs() < 1e-300 {
                0.0
            } else {
                m[i][n] / m[i][i]
            }
        })
        .collect()
}

/// The diagonal of (AᵀA + λI)⁻¹ by Gauss-Jordan elimination; an entry whose
/// pivot vanished (a column the others produce) is infinite.
pub fn inverse_diagonal(a: &[Vec<f64>], lambda: f64) -> Vec<f64> {
    let n = a.first().map_or(0, Vec::len);
    let mut m = vec![vec![0.0; 2 * n]; n];
    for i in 0..n {
        for j in 0..n {
            m[i][j] =
                a.iter().map(|r| r[i] * r[j]).sum::<f64>() + if i == j { lambda } else { 0.0 };
        }
        m[i][n + i] = 1.0;
    }
    for col in 0..n {
        let piv = (col..n)
            .max_by(|&x, &y| m[x][col].abs().total_cmp(&m[y][col].abs()))
            .unwrap_or(col);
        m.swap(col, piv);
        let d = m[col][col];
        if d.abs() < 1e-300 {
            return vec![f64::INFINITY; n];
        }
        for x in m[col].iter_mut() {
            *x /= d;
        }
        let pivot = m[col].clone();
        for (r, row) in m.iter_mut().enumerate() {
            if r != col {
                let f = row[col];
                for (x, p) in row.iter_mut().zip(&pivot) {
                    *x -= f * p;
                }
            }
        }
    }
    (0..n).map(|i| m[i][n + i]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::fit::RIDGE;

    #[test]
    fn ridge_recovers_an_exercised_coefficient_and_leaves_the_rest() {
        // Two phases; knob 0 moves both, knob 1 neither (not exercised).
        let a = vec![vec![0.1, 0.0], vec![0.2, 0.0]];
        let b = vec![0.05, 0.10];
        let x = solve(&a, &b, RIDGE);
        assert!((x[0] - 0.5).abs() < 0.01, "{x:?}");
        assert_eq!(x[1], 0.0);
    }

    #[test]
    fn the_inverse_diagonal_is_the_variance_of_each_unknown() {
        // AᵀA = diag(4, 0.25): the inverse is diag(0.25, 4).
        let a = vec![vec![2.0, 0.0], vec![0.0, 0.5]];
        let d = inverse_diagonal(&a, 0.0);
        assert!(
            (d[0] - 0.25).abs() < 1e-12 && (d[1] - 4.0).abs() < 1e-12,
            "{d:?}"
        );
        // Two equal columns: neither can be told apart.
        let same = vec![vec![1.0, 1.0], vec![2.0, 2.0]];
        assert!(inverse_diagonal(&same, 0.0).iter().all(|v| v.is_infinite()));
    }
}
