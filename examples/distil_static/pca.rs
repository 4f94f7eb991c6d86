//! Principal components of the token rows, by the cyclic Jacobi method on their
//! covariance (384 × 384: small enough that a dependency-free solver takes seconds).

/// `rows` (n rows of `dim`) centred on the mean of the `usable` ones and projected on
/// their top `k` principal components; unusable rows become zeros.
pub fn project(rows: &[f32], dim: usize, k: usize, usable: &[bool]) -> Vec<f32> {
    let k = k.min(dim);
    let n = rows.len() / dim;
    let mut mean = vec![0f64; dim];
    let mut m = 0usize;
    for (row, _) in rows.chunks_exact(dim).zip(usable).filter(|(_, &u)| u) {
        mean.iter_mut()
            .zip(row)
            .for_each(|(a, &x)| *a += f64::from(x));
        m += 1;
    }
    mean.iter_mut().for_each(|a| *a /= m.max(1) as f64);
    let mut cov = vec![0f64; dim * dim];
    let mut c = vec![0f64; dim];
    for (row, _) in rows.chunks_exact(dim).zip(usable).filter(|(_, &u)| u) {
        for j in 0..dim {
            c[j] = f64::from(row[j]) - mean[j];
        }
        for i in 0..dim {
            let ci = c[i];
            let line = &mut cov[i * dim..i * dim + dim];
            for j in i..dim {
                line[j] += ci * c[j];
            }
        }
    }
    for i in 0..dim {
        for j in 0..i {
            cov[i * dim + j] = cov[j * dim + i];
        }
    }
    let (values, vectors) = jacobi(cov, dim);
    let mut order: Vec<usize> = (0..dim).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    let total: f64 = values.iter().sum();
    let kept: f64 = order[..k].iter().map(|&i| values[i]).sum();
    eprintln!(
        "PCA: {k} of {dim} components keep {:.1}% of the variance",
        100.0 * kept / total
    );
    let mut out = vec![0f32; n * k];
    for (r, (row, &u)) in rows.chunks_exact(dim).zip(usable).enumerate() {
        if !u {
            continue;
        }
        for (o, &comp) in order[..k].iter().enumerate() {
            let mut s = 0f64;
            for j in 0..dim {
                s += (f64::from(row[j]) - mean[j]) * vectors[j * dim + comp];
            }
            out[r * k + o] = s as f32;
        }
    }
    out
}

/// Eigenvalues and eigenvectors (as columns of a row-major matrix) of the symmetric
/// `a` (n × n).
fn jacobi(mut a: Vec<f64>, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut v = vec![0f64; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    for sweep in 0..50 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i * n + j] * a[i * n + j])
            .sum();
        let diag: f64 = (0..n).map(|i| a[i * n + i] * a[i * n + i]).sum();
        if off <= 1e-22 * diag {
            eprintln!("Jacobi: converged after {sweep} sweeps");
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq.abs() < 1e-300 {
                    continue;
                }
                let (app, aqq) = (a[p * n + p], a[q * n + q]);
                let theta = (aqq - app) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                // Rotate rows and columns p and q of a, and columns p and q of v.
                for k in 0..n {
                    let (akp, akq) = (a[k * n + p], a[k * n + q]);
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p * n + k], a[q * n + k]);
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k * n + p], v[k * n + q]);
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..n).map(|i| a[i * n + i]).collect(), v)
}

#[cfg(test)]
mod tests {
    #[test]
    fn finds_the_eigenvectors_of_a_small_matrix() {
        let (values, vectors) = super::jacobi(vec![2.0, 1.0, 1.0, 2.0], 2);
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        assert!((sorted[0] - 1.0).abs() < 1e-9 && (sorted[1] - 3.0).abs() < 1e-9);
        let i = if values[0] > values[1] { 0 } else { 1 };
        assert!((vectors[i].abs() - 0.5f64.sqrt()).abs() < 1e-9);
    }
}
