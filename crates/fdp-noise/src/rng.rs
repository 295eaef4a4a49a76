//! The randomness policy: releases draw from a CSPRNG (ChaCha12) seeded by the operating system;
//! a fixed seed is an explicit opt-in for experiments and tests, and is recorded.

use rand::rngs::{StdRng, SysRng};
use rand::{Rng, SeedableRng, TryCryptoRng, TryRng};
use serde::{Deserialize, Serialize};

use crate::error::{NoiseError, Result};

/// Where a [`NoiseRng`]'s seed came from; recorded in every release's metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum RngProvenance {
    /// Seeded from the operating system's entropy source (the default for releases).
    OsEntropy,
    /// Seeded with a fixed, user-chosen seed: reproducible, and therefore **not** private against
    /// anyone who knows the seed. For experiments and tests only.
    FixedSeed(u64),
}

impl RngProvenance {
    /// True when the stream is reproducible from a seed.
    pub fn is_seeded(self) -> bool {
        matches!(self, Self::FixedSeed(_))
    }
}

/// The random source of every fdp sampler: ChaCha12 (`rand::rngs::StdRng`), a CSPRNG.
///
/// ```
/// use fdp_noise::NoiseRng;
/// let mut release_rng = NoiseRng::from_os()?;            // what releases use
/// assert!(!release_rng.provenance().is_seeded());
/// let experiment_rng = NoiseRng::seeded(42);              // explicit opt-in, recorded
/// assert!(experiment_rng.provenance().is_seeded());
/// # Ok::<(), fdp_noise::NoiseError>(())
/// ```
#[derive(Debug)]
pub struct NoiseRng {
    inner: StdRng,
    provenance: RngProvenance,
}

impl NoiseRng {
    /// A CSPRNG seeded from the operating system.
    pub fn from_os() -> Result<Self> {
        let inner = StdRng::try_from_rng(&mut SysRng).map_err(|e| NoiseError::Entropy(e.to_string()))?;
        Ok(Self { inner, provenance: RngProvenance::OsEntropy })
    }

    /// A reproducible stream from a fixed seed (experiments and tests only; recorded as seeded).
    pub fn seeded(seed: u64) -> Self {
        Self { inner: StdRng::seed_from_u64(seed), provenance: RngProvenance::FixedSeed(seed) }
    }

    /// Where the seed came from.
    pub fn provenance(&self) -> RngProvenance {
        self.provenance
    }

    /// `count` independent child streams seeded from this one (for parallel sampling). Children
    /// inherit the provenance: children of a seeded stream are reproducible too.
    pub fn split(&mut self, count: usize) -> Vec<NoiseRng> {
        (0..count).map(|_| Self { inner: StdRng::from_rng(&mut self.inner), provenance: self.provenance }).collect()
    }
}

impl TryRng for NoiseRng {
    type Error = std::convert::Infallible;

    #[inline]
    fn try_next_u32(&mut self) -> std::result::Result<u32, Self::Error> {
        Ok(self.inner.next_u32())
    }

    #[inline]
    fn try_next_u64(&mut self) -> std::result::Result<u64, Self::Error> {
        Ok(self.inner.next_u64())
    }

    #[inline]
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> std::result::Result<(), Self::Error> {
        self.inner.fill_bytes(dst);
        Ok(())
    }
}

impl TryCryptoRng for NoiseRng {}
