//! Dense linear algebra whose results do not depend on the number of threads.
//!
//! faer splits a parallel factorisation or product into as many pieces as the parallelism it is
//! given, and the order in which the pieces' floating-point sums are combined follows that split. Its
//! operator overloads (`a * b`, `.qr()`, `.self_adjoint_eigen()`, `.llt()`) take the split from the
//! current rayon pool, so the same basis came out different in the last bits under
//! `RAYON_NUM_THREADS = 1, 2, 7` — and with it every release built on it. Every call here splits its
//! work into [`PARALLEL_SPLIT`] pieces whatever the pool, so a basis, a projection or a Cholesky factor
//! is bit-identical on any thread count (the pieces still run in parallel on the pool there is).

use faer::diag::Diag;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{LltRegularization, cholesky_in_place, cholesky_in_place_scratch};
use faer::linalg::evd::{ComputeEigenvectors, self_adjoint_evd, self_adjoint_evd_scratch};
use faer::linalg::householder::{
    apply_block_householder_sequence_on_the_left_in_place_scratch,
    apply_block_householder_sequence_on_the_left_in_place_with_conj,
};
use faer::linalg::qr::no_pivoting::factor::{qr_in_place, qr_in_place_scratch, recommended_block_size};
use faer::{Accum, Conj, Mat, MatRef, Par};

use crate::error::{MercerError, Result};

/// How many pieces every parallel dense operation is split into, whatever the thread count.
pub const PARALLEL_SPLIT: usize = 4;

/// The fixed parallelism of every dense operation of fdp.
pub fn fixed_par() -> Par {
    Par::rayon(PARALLEL_SPLIT)
}

/// `a · b`, split into [`PARALLEL_SPLIT`] pieces.
pub fn matmul(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> Mat<f64> {
    let mut out = Mat::<f64>::zeros(a.nrows(), b.ncols());
    faer::linalg::matmul::matmul(out.as_mut(), Accum::Replace, a, b, 1.0, fixed_par());
    out
}

/// The eigenvalues of a symmetric matrix (lower triangle read), **descending**, without the
/// eigenvectors (about a seventh of the work of [`symmetric_eigen`]).
pub fn symmetric_eigenvalues(a: MatRef<'_, f64>) -> Result<Vec<f64>> {
    let n = a.nrows();
    let par = fixed_par();
    let mut s = Diag::<f64>::zeros(n);
    let scratch = self_adjoint_evd_scratch::<f64>(n, ComputeEigenvectors::No, par, Default::default());
    self_adjoint_evd(a, s.as_mut(), None, par, MemStack::new(&mut MemBuffer::new(scratch)), Default::default())
        .map_err(|e| MercerError::Decomposition(format!("{e:?}")))?;
    let s = s.column_vector();
    Ok((0..n).rev().map(|i| s[i]).collect())
}

/// Eigenpairs of a symmetric matrix (lower triangle read), eigenvalues **descending**.
pub fn symmetric_eigen(a: MatRef<'_, f64>) -> Result<(Vec<f64>, Mat<f64>)> {
    let n = a.nrows();
    let par = fixed_par();
    let mut s = Diag::<f64>::zeros(n);
    let mut u = Mat::<f64>::zeros(n, n);
    let scratch = self_adjoint_evd_scratch::<f64>(n, ComputeEigenvectors::Yes, par, Default::default());
    self_adjoint_evd(
        a,
        s.as_mut(),
        Some(u.as_mut()),
        par,
        MemStack::new(&mut MemBuffer::new(scratch)),
        Default::default(),
    )
    .map_err(|e| MercerError::Decomposition(format!("{e:?}")))?;
    let s = s.column_vector();
    let values: Vec<f64> = (0..n).rev().map(|i| s[i]).collect();
    // Columns in the order of the values, swapped in place (no second n x n matrix).
    for j in 0..n / 2 {
        faer::perm::swap_cols_idx(u.as_mut(), j, n - 1 - j);
    }
    Ok((values, u))
}

/// The thin Q factor (m x min(m, n)) of a Householder QR of `a`.
pub fn thin_q(a: MatRef<'_, f64>) -> Mat<f64> {
    let (m, n) = (a.nrows(), a.ncols());
    let size = m.min(n);
    let par = fixed_par();
    let block = recommended_block_size::<f64>(m, n);
    let mut qr = a.to_owned();
    let mut coeff = Mat::<f64>::zeros(block, size);
    qr_in_place(
        qr.as_mut(),
        coeff.as_mut(),
        par,
        MemStack::new(&mut MemBuffer::new(qr_in_place_scratch::<f64>(m, n, block, par, Default::default()))),
        Default::default(),
    );
    let mut q = Mat::<f64>::identity(m, size);
    let scratch = apply_block_householder_sequence_on_the_left_in_place_scratch::<f64>(m, block, size);
    apply_block_householder_sequence_on_the_left_in_place_with_conj(
        qr.as_ref().subcols(0, size),
        coeff.as_ref(),
        Conj::No,
        q.as_mut(),
        par,
        MemStack::new(&mut MemBuffer::new(scratch)),
    );
    q
}

/// The lower Cholesky factor L of a symmetric positive-definite matrix (`a = L Lᵀ`), or `None` when
/// `a` is not numerically positive definite.
pub fn cholesky(a: MatRef<'_, f64>) -> Option<Mat<f64>> {
    cholesky_owned(a.to_owned())
}

/// [`cholesky`] in the storage of `a` (lower triangle read; blocked, split into [`PARALLEL_SPLIT`]
/// pieces): no copy of the K x K matrix, the upper triangle zeroed in place.
pub fn cholesky_owned(mut a: Mat<f64>) -> Option<Mat<f64>> {
    let n = a.nrows();
    let par = fixed_par();
    let scratch = cholesky_in_place_scratch::<f64>(n, par, Default::default());
    cholesky_in_place(
        a.as_mut(),
        LltRegularization::default(),
        par,
        MemStack::new(&mut MemBuffer::new(scratch)),
        Default::default(),
    )
    .ok()?;
    for j in 1..n {
        a.col_mut(j).subrows_mut(0, j).fill(0.0);
    }
    Some(a)
}

/// Solves `L x = b` for lower-triangular L (forward substitution, sequential: exact order).
pub fn solve_lower(l: MatRef<'_, f64>, b: &[f64]) -> Vec<f64> {
    let mut x = vec![0.0; b.len()];
    for i in 0..b.len() {
        let s: f64 = (0..i).map(|j| l[(i, j)] * x[j]).sum();
        x[i] = (b[i] - s) / l[(i, i)];
    }
    x
}

/// Solves `Lᵀ x = b` for lower-triangular L (back substitution).
pub fn solve_lower_transposed(l: MatRef<'_, f64>, b: &[f64]) -> Vec<f64> {
    let m = b.len();
    let mut x = vec![0.0; m];
    for i in (0..m).rev() {
        let s: f64 = (i + 1..m).map(|j| l[(j, i)] * x[j]).sum();
        x[i] = (b[i] - s) / l[(i, i)];
    }
    x
}

/// Solves `a x = b` for symmetric positive-definite `a` through its Cholesky factor.
pub fn solve_spd(a: MatRef<'_, f64>, b: &[f64]) -> Option<Vec<f64>> {
    let l = cholesky(a)?;
    Some(solve_lower_transposed(l.as_ref(), &solve_lower(l.as_ref(), b)))
}

/// `ln(1 + e^x)` without overflow.
pub fn softplus(x: f64) -> f64 {
    if x > 0.0 { x + (-x).exp().ln_1p() } else { x.exp().ln_1p() }
}

/// Minimises a smooth convex function by **damped Newton**: the step `s = H⁻¹ g` (Cholesky), then
/// `x ← x - t s` with t halved from 1 until the Armijo condition
/// `f(x - t s) <= f(x) - 10^-4 t gᵀs` holds (or t < 10^-10), so the iteration cannot overshoot where
/// the curvature is small. Stops after `max_iter` steps, when `||g|| <= gradient_tol`, or when the
/// Newton decrement `gᵀs <= decrement_tol`. `derivatives(x)` returns the gradient and the Hessian;
/// `None` when a Hessian is not positive definite.
pub fn damped_newton(
    start: Vec<f64>,
    max_iter: usize,
    (gradient_tol, decrement_tol): (f64, f64),
    objective: impl Fn(&[f64]) -> f64,
    derivatives: impl Fn(&[f64]) -> (Vec<f64>, Mat<f64>),
) -> Option<Vec<f64>> {
    let mut x = start;
    for _ in 0..max_iter {
        let (gradient, hessian) = derivatives(&x);
        if gradient.iter().map(|v| v * v).sum::<f64>().sqrt() <= gradient_tol {
            break;
        }
        let step = solve_spd(hessian.as_ref(), &gradient)?;
        let slope: f64 = gradient.iter().zip(&step).map(|(g, s)| g * s).sum();
        if slope.abs() <= decrement_tol {
            break;
        }
        let current = objective(&x);
        let mut t = 1.0;
        loop {
            let candidate: Vec<f64> = x.iter().zip(&step).map(|(v, s)| v - t * s).collect();
            if objective(&candidate) <= current - 1e-4 * t * slope || t < 1e-10 {
                x = candidate;
                break;
            }
            t *= 0.5;
        }
    }
    Some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factorisations_reproduce_their_matrix() {
        let n = 40;
        let a =
            Mat::from_fn(n, n, |i, j| (-((i as f64 - j as f64) / 7.0).powi(2)).exp() + if i == j { 0.1 } else { 0.0 });
        let (values, u) = symmetric_eigen(a.as_ref()).unwrap();
        assert!(values.windows(2).all(|w| w[0] >= w[1]));
        let back = matmul(
            matmul(u.as_ref(), Mat::from_fn(n, n, |i, j| if i == j { values[i] } else { 0.0 }).as_ref()).as_ref(),
            u.transpose(),
        );
        let l = cholesky(a.as_ref()).unwrap();
        let llt = matmul(l.as_ref(), l.transpose());
        let b: Vec<f64> = (0..n).map(|i| (i as f64).sin()).collect();
        let x = solve_spd(a.as_ref(), &b).unwrap();
        for i in 0..n {
            let ax: f64 = (0..n).map(|j| a[(i, j)] * x[j]).sum();
            assert!((ax - b[i]).abs() < 1e-10);
            for j in 0..n {
                assert!((back[(i, j)] - a[(i, j)]).abs() < 1e-12 && (llt[(i, j)] - a[(i, j)]).abs() < 1e-12);
            }
        }
        let tall = Mat::from_fn(60, 5, |i, j| ((i * 7 + j * 3) % 11) as f64 - 5.0);
        let q = thin_q(tall.as_ref());
        let qtq = matmul(q.transpose(), q.as_ref());
        for i in 0..5 {
            for j in 0..5 {
                assert!((qtq[(i, j)] - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12);
            }
        }
        assert!(cholesky(Mat::from_fn(2, 2, |i, j| if i == j { -1.0 } else { 0.0 }).as_ref()).is_none());
    }

    #[test]
    fn damped_newton_minimises_a_logistic_type_objective() {
        // f(x) = softplus(x0 - 1) + softplus(1 - x0) + (x1 - 2)²: minimum at (1, 2).
        let f = |x: &[f64]| softplus(x[0] - 1.0) + softplus(1.0 - x[0]) + (x[1] - 2.0).powi(2);
        let sigma = |z: f64| 1.0 / (1.0 + (-z).exp());
        let d = |x: &[f64]| {
            let (a, b) = (sigma(x[0] - 1.0), sigma(1.0 - x[0]));
            let h = Mat::from_fn(2, 2, |i, j| match (i, j) {
                (0, 0) => a * (1.0 - a) + b * (1.0 - b),
                (1, 1) => 2.0,
                _ => 0.0,
            });
            (vec![a - b, 2.0 * (x[1] - 2.0)], h)
        };
        let x = damped_newton(vec![8.0, -3.0], 100, (1e-12, 0.0), f, d).unwrap();
        assert!((x[0] - 1.0).abs() < 1e-9 && (x[1] - 2.0).abs() < 1e-9, "{x:?}");
        assert!((softplus(800.0) - 800.0).abs() < 1e-12 && softplus(-800.0) >= 0.0);
    }
}
