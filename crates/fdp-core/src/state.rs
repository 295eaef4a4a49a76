//! Mergeable summaries: partial states built on parts of the data (partitions of a Spark job, files,
//! threads), merged exactly, and released once.
//!
//! Every summary in fdp is a sum of per-record contributions, each clipped (or replaced by a
//! public default) **before** it is added. A [`SummaryState`] holds those sums as integers: each
//! contribution `v` is converted to the fixed-point number `trunc(v · 2^e)` (an `i64`; `e` is set
//! from the public bound on `|v|` so that no contribution overflows) and added to an `i128`. Integer
//! addition is associative, so the merged state — and the summary computed from it — is
//! **bit-identical whatever the partitioning and the order**; the one-pass summary of
//! [`Mechanism::summarize`] is computed the same way, so a distributed release equals the in-process
//! one at a fixed seed. Truncation toward zero never increases a contribution's magnitude, so the
//! clipping bound (and the sensitivity) still holds after the conversion; the resolution `2^-e` is
//! about `2^-62` of the bound.
//!
//! A state travels as bytes ([`SummaryState::to_bytes`]): a magic word, a format version, the
//! fingerprint of the mechanism that made it (its public parameters), the record count, the sums,
//! and a CRC-32 of everything before it. A truncated, corrupted or foreign state is refused with an
//! error saying which.

use crate::error::{Error, Result};
use crate::mechanism::Mechanism;

const MAGIC: &[u8; 8] = b"FDPSTATE";
const VERSION: u16 = 1;
const HEADER: usize = 8 + 2 + 8 + 8 + 8;

/// Exact partial sums of clipped per-record contributions (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryState {
    fingerprint: u64,
    records: u64,
    sums: Vec<i128>,
}

impl SummaryState {
    /// An empty state of `width` sums for the mechanism with `fingerprint`.
    pub fn new(fingerprint: u64, width: usize) -> Self {
        Self { fingerprint, records: 0, sums: vec![0; width] }
    }

    /// The fingerprint of the mechanism that made the state.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// The same records and sums under another fingerprint: for a layer that adds public facts the
    /// mechanism's own fingerprint does not cover (the registry adds the frame's grid in the data's
    /// units), and takes it off again before the mechanism reads the state. A fingerprint tells
    /// states of different mechanisms apart; it is not a security boundary (anyone can build a state).
    pub fn relabelled(mut self, fingerprint: u64) -> Self {
        self.fingerprint = fingerprint;
        self
    }

    /// How many records the state has summed.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The integer sums.
    pub fn sums(&self) -> &[i128] {
        &self.sums
    }

    /// Adds `records` records whose contributions add up to `sums` (what a mechanism's
    /// `update_state` does with each part of the data).
    pub fn add(&mut self, records: u64, sums: &[i128]) -> Result<()> {
        self.merge(&Self { fingerprint: self.fingerprint, records, sums: sums.to_vec() })
    }

    /// Refuses a state whose sums exceed what its own record count can contribute: every
    /// contribution is an `i64` (`|c| <= 2^63`), so `|sum_k| <= records · 2^63` for each sum of a
    /// state built by `update_state`. The check depends on the state alone (never on the records of
    /// another state it is merged with), so a crafted state is refused whatever the other data are;
    /// and two states that pass it merge without overflow: `(r_1 + r_2) · 2^63 <= (2^64 - 1) · 2^63
    /// < 2^127 - 1 = i128::MAX`.
    pub fn check_sums(&self) -> Result<()> {
        let cap = u128::from(self.records) << 63;
        match self.sums.iter().position(|s| s.unsigned_abs() > cap) {
            None => Ok(()),
            Some(k) => Err(Error::BadState(format!(
                "sum {k} of the summary state ({}) exceeds what its {} records can contribute (2^63 each)",
                self.sums[k], self.records
            ))),
        }
    }

    /// Adds another state of the same mechanism (exact: integer sums). Both states are first
    /// checked by [`check_sums`](Self::check_sums), so the outcome never depends on which valid
    /// records the other state holds, and the addition cannot overflow.
    pub fn merge(&mut self, other: &SummaryState) -> Result<()> {
        if other.fingerprint != self.fingerprint || other.sums.len() != self.sums.len() {
            return Err(Error::BadState(format!(
                "cannot merge states of different mechanisms (fingerprints {:016x} and {:016x}, widths {} and {})",
                self.fingerprint,
                other.fingerprint,
                self.sums.len(),
                other.sums.len()
            )));
        }
        self.check_sums()?;
        other.check_sums()?;
        let overflow = || Error::BadState("merging would overflow the 128-bit sums".into());
        self.records = self.records.checked_add(other.records).ok_or_else(overflow)?;
        for (a, b) in self.sums.iter_mut().zip(&other.sums) {
            *a = a.checked_add(*b).ok_or_else(overflow)?;
        }
        Ok(())
    }

    /// The state as bytes: `FDPSTATE`, version (u16), fingerprint, records, width (u64 each), the
    /// sums (i128 each), CRC-32 (u32); little-endian.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + 16 * self.sums.len() + 4);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.fingerprint.to_le_bytes());
        out.extend_from_slice(&self.records.to_le_bytes());
        out.extend_from_slice(&(self.sums.len() as u64).to_le_bytes());
        for s in &self.sums {
            out.extend_from_slice(&s.to_le_bytes());
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// A state from [`to_bytes`](Self::to_bytes), refused if it is truncated, corrupted (CRC), of
    /// another format version, or not a state at all.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let bad = |m: String| Error::BadState(m);
        if bytes.len() < HEADER + 4 || &bytes[..8] != MAGIC {
            return Err(bad(format!("not an fdp summary state ({} bytes, no FDPSTATE header)", bytes.len())));
        }
        let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or([0; 8]));
        let version = u16::from_le_bytes([bytes[8], bytes[9]]);
        let width = usize::try_from(u64_at(26)).unwrap_or(usize::MAX);
        let expected = width.checked_mul(16).and_then(|w| w.checked_add(HEADER + 4));
        if expected != Some(bytes.len()) {
            return Err(bad(format!(
                "truncated or padded summary state: {} bytes, {} expected for {width} sums",
                bytes.len(),
                expected.map_or_else(|| "more than addressable".to_string(), |e| e.to_string())
            )));
        }
        let (body, tail) = bytes.split_at(bytes.len() - 4);
        let crc = u32::from_le_bytes(tail.try_into().unwrap_or([0; 4]));
        if crc32fast::hash(body) != crc {
            return Err(bad("corrupted summary state: the CRC-32 does not match".into()));
        }
        if version != VERSION {
            return Err(bad(format!("summary state format version {version}; this fdp reads version {VERSION}")));
        }
        let sums =
            body[HEADER..].chunks_exact(16).map(|c| i128::from_le_bytes(c.try_into().unwrap_or([0; 16]))).collect();
        let state = Self { fingerprint: u64_at(10), records: u64_at(18), sums };
        state.check_sums()?;
        Ok(state)
    }
}

/// A mechanism whose summary is a sum of clipped per-record contributions, built in parts.
///
/// `summarize(data)` must equal `state_summary` of `update_state` of the whole data on an empty
/// state, bit for bit (implementations compute `summarize` that way), and `update_state` on parts
/// merged in any grouping must give the same state.
pub trait MergeableMechanism<D: ?Sized>: Mechanism<D> {
    /// An empty state for this mechanism.
    fn empty_state(&self) -> SummaryState;
    /// Adds the records of `part` (clipped, or replaced by the public default) to `state`. Any
    /// number of records; n is checked when the summary is computed.
    fn update_state(&self, state: &mut SummaryState, part: &D) -> Result<()>;
    /// The summary of a complete state (every record; its count must be the mechanism's n).
    fn state_summary(&self, state: &SummaryState) -> Result<Vec<f64>>;
}

/// The state must have the layout of `empty` (the mechanism's [`empty_state`]: its fingerprint and
/// its number of sums), hold `n` records (when n is public), and have sums its record count can
/// produce ([`SummaryState::check_sums`]). Everything a `state_summary` relies on is checked here,
/// so a session calls it before anything is charged.
///
/// [`empty_state`]: MergeableMechanism::empty_state
pub fn check_state_layout(state: &SummaryState, empty: &SummaryState, n: Option<usize>) -> Result<()> {
    check_state(state, empty.fingerprint, n)?;
    if state.sums.len() != empty.sums.len() {
        return Err(Error::Shape {
            what: "sums in the summary state",
            expected: empty.sums.len(),
            got: state.sums.len(),
        });
    }
    state.check_sums()
}

/// The state must come from a mechanism with `fingerprint` and hold `n` records (when n is public).
/// [`check_state_layout`] checks the width and the sums as well.
pub fn check_state(state: &SummaryState, fingerprint: u64, n: Option<usize>) -> Result<()> {
    if state.fingerprint != fingerprint {
        return Err(Error::BadState(format!(
            "the state was made by another mechanism (fingerprint {:016x}, this one is {fingerprint:016x})",
            state.fingerprint
        )));
    }
    if let Some(n) = n
        && state.records != n as u64
    {
        return Err(Error::Shape {
            what: "records in the summary state",
            expected: n,
            got: usize::try_from(state.records).unwrap_or(usize::MAX),
        });
    }
    Ok(())
}

/// A fixed-point scale for contributions bounded by `bound` in absolute value: `e` with
/// `bound · 2^e <= 2^62`, so `trunc(v · 2^e)` fits an `i64` with room to spare.
pub fn fixed_point_exponent(bound: f64) -> i32 {
    let bound = if bound.is_finite() && bound > 0.0 { bound } else { 1.0 };
    62 - bound.log2().ceil() as i32
}

/// `trunc(v · 2^e)` as an integer (0 for a non-finite `v`; saturating beyond the i64 range, which a
/// bounded contribution never reaches).
#[inline]
pub fn to_fixed(v: f64, e: i32) -> i128 {
    to_fixed_scaled(v, fixed_scale(e))
}

/// `2^e`, the scale of [`to_fixed_scaled`]: compute it once outside a hot loop (a `powi` in the
/// loop is not hoisted and cost a third of an N² kernel sum).
pub fn fixed_scale(e: i32) -> f64 {
    2f64.powi(e)
}

/// [`to_fixed`] with the scale `2^e` given.
#[inline]
pub fn to_fixed_scaled(v: f64, scale: f64) -> i128 {
    // `as` truncates toward zero, saturates, and maps NaN to 0.
    (v * scale) as i64 as i128
}

/// `s · 2^-e` as the nearest f64 (one rounding).
#[inline]
pub fn from_fixed(s: i128, e: i32) -> f64 {
    (s as f64) * 2f64.powi(-e)
}

/// A 64-bit hash of `words` (FNV-1a over words, then a final avalanche), for fingerprints of
/// public parameters: it tells states of different mechanisms apart, it is not a security boundary.
pub fn fingerprint_of(words: impl IntoIterator<Item = u64>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for w in words {
        h = (h ^ w).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_and_every_kind_of_damage_is_refused() {
        let mut state = SummaryState::new(7, 3);
        state.add(2, &[1, -2, 1 << 63]).unwrap();
        let bytes = state.to_bytes();
        assert_eq!(SummaryState::from_bytes(&bytes).unwrap(), state);
        let message = |b: &[u8]| SummaryState::from_bytes(b).unwrap_err().to_string();
        assert!(message(&bytes[..bytes.len() - 1]).contains("truncated"));
        let mut flipped = bytes.clone();
        flipped[40] ^= 1;
        assert!(message(&flipped).contains("CRC"));
        assert!(message(b"hello").contains("not an fdp summary state"));
        let mut other = SummaryState::new(8, 3);
        assert!(other.merge(&state).unwrap_err().to_string().contains("different mechanisms"));
        let mut big = SummaryState::new(7, 3);
        assert!(big.add(1, &[i128::MAX, 0, 0]).unwrap_err().to_string().contains("exceeds what its 1 records"));
        big.add(1, &[1 << 63, 0, 0]).unwrap();
        assert!(SummaryState::from_bytes(&big.to_bytes()).is_ok());
    }

    #[test]
    fn fixed_point_truncates_toward_zero_and_keeps_the_bound() {
        let e = fixed_point_exponent(3.0);
        assert!(3.0 * 2f64.powi(e) <= 2f64.powi(62));
        for v in [3.0, -3.0, 1e-300, -0.1, 2.999_999_999] {
            let back = from_fixed(to_fixed(v, e), e);
            assert!(back.abs() <= v.abs() && (back - v).abs() <= 2f64.powi(-e));
        }
        assert_eq!(to_fixed(f64::NAN, e), 0);
    }

    /// A crafted state near `i128::MAX` used to merge or fail on overflow depending on the sign of
    /// the victim's contribution; now it is refused for its own record count whatever the victim.
    #[test]
    fn a_crafted_state_is_refused_whatever_the_other_record() {
        let crafted = SummaryState { fingerprint: 7, records: 1, sums: vec![i128::MAX - 5] };
        let bytes = crafted.to_bytes();
        assert!(SummaryState::from_bytes(&bytes).unwrap_err().to_string().contains("exceeds"));
        for x in [100i128, -100] {
            let mut victim = SummaryState::new(7, 1);
            victim.add(1, &[x]).unwrap();
            let err = victim.merge(&crafted).unwrap_err().to_string();
            assert!(err.contains("exceeds what its 1 records"), "{err}");
        }
        // Valid states at the record limit merge without overflow.
        let full = SummaryState { fingerprint: 7, records: u64::MAX / 2, sums: vec![i128::from(u64::MAX / 2) << 63] };
        let mut merged = full.clone();
        merged.merge(&full).unwrap();
        assert!(merged.check_sums().is_ok());
        let empty = SummaryState::new(7, 2);
        let mut short = SummaryState::new(7, 1);
        short.add(3, &[1]).unwrap();
        let err = check_state_layout(&short, &empty, Some(3)).unwrap_err().to_string();
        assert!(err.contains("sums in the summary state is 1") && err.contains("built for 2"), "{err}");
    }
}
