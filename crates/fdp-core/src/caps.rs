//! **Caps on the sizes a user controls** (grid points, degrees, sketch lengths, synthetic points,
//! candidate families): checked when a mechanism is built, before any budget is charged, so that no
//! request can exhaust memory, overflow the stack or run for hours after the charge. Each error names
//! the parameter, the cap and why (the memory or time it bounds); docs/design-notes/caps.md lists
//! them all.

use crate::error::{Error, Result};

/// The most `f64` values one allocation of a mechanism may hold: `2^27`, 1 GiB.
pub const MAX_F64_VALUES: usize = 1 << 27;

/// The most records a replace-one mechanism takes (n is public): `2^53`. n is then exactly a
/// float (the division by n rounds once) and the clipped sums' prefix sums over 64 bounds,
/// `|Σ| <= 64 · n · 2^63`, fit an `i128`.
pub const MAX_RECORDS: usize = 1 << 53;

/// `n` if `1 <= n <= `[`MAX_RECORDS`], else a parameter error naming `n`.
pub fn records(n: usize) -> Result<usize> {
    if n == 0 {
        return Err(Error::bad_parameter("n", 0usize, "need at least one record"));
    }
    at_most("n", n, MAX_RECORDS, "at most 2^53 records: n must be an exact float and the exact sums must fit i128")
}

/// `value` if at most `cap`, else a parameter error naming it, with `reason` (which states the cap
/// and what it bounds).
pub fn at_most(name: &'static str, value: usize, cap: usize, reason: &'static str) -> Result<usize> {
    if value <= cap { Ok(value) } else { Err(Error::bad_parameter(name, value, reason)) }
}

/// The product of `factors` (the shape of an array of `f64`) if it is at most
/// [`MAX_F64_VALUES`] (1 GiB), else a parameter error naming `name` with `reason`; an overflowing
/// product is refused too. `value` in the error is the product (as a float: it may overflow a
/// `usize`).
///
/// ```
/// use fdp_core::caps::{MAX_F64_VALUES, f64_values};
/// assert_eq!(f64_values("size", &[1000, 1000], "at most 1 GiB").unwrap(), 1_000_000);
/// assert!(f64_values("size", &[MAX_F64_VALUES, 2], "at most 1 GiB").is_err());
/// assert!(f64_values("size", &[usize::MAX, 3], "at most 1 GiB").is_err());
/// ```
pub fn f64_values(name: &'static str, factors: &[usize], reason: &'static str) -> Result<usize> {
    let product = factors.iter().try_fold(1usize, |p, f| p.checked_mul(*f));
    match product {
        Some(p) if p <= MAX_F64_VALUES => Ok(p),
        _ => Err(Error::bad_parameter(name, factors.iter().map(|f| *f as f64).product::<f64>(), reason)),
    }
}
