//! Whether the exact samplers run in fixed work (the default) or in variable time (an explicit
//! opt-in for simulations): docs/DESIGN.md section 15.5.
//!
//! The exact samplers of [`crate::discrete`] (discrete Laplace and Gaussian) and
//! [`crate::exponential`] are rejection samplers built on an exact Bernoulli(exp(−γ)) that reads one
//! word, and the discrete Laplace's geometric `v` is one word too; each has an exact fallback,
//! taken with probability below 2^-34, that reads more. No loop runs a number of times that depends
//! on the value drawn, so the operations executed do not depend on the output except with
//! probability below about 2^-32 per draw (a fallback). The one step that still differs between
//! the modes is the discrete Laplace's division `(u + t v) / s` by an `s` that is not a power of
//! two: [`SamplerTiming::Padded`] divides in fixed work (128 steps), [`SamplerTiming::Variable`]
//! uses the hardware's value-dependent u128 `/`. A draw costs 0.05–0.1 µs either way (the lattice
//! samplers' `s` are powers of two).
//!
//! **Both modes make exactly the same draws on the caller's stream** (same values, same order, same
//! count) and return the same value: the division is the only step that differs. A seeded release
//! is the same in both modes; only its running time can differ.
//!
//! The mode is process-wide and starts as [`SamplerTiming::Padded`] (a thread can require padding for
//! its own draws with [`padded_on_this_thread`]). Releases from the CLI, Python
//! and fdp-core's `Session` never change it; simulations that
//! make many thousands of draws for statistics (law tests, black-box audits, reproductions,
//! benchmarks) opt in with [`allow_variable_time_for_simulation`]. Every release records the mode
//! its noise was drawn in (`ReleaseMetadata::sampler_timing` in fdp-core).
//!
//! ```
//! use fdp_noise::timing::{self, SamplerTiming};
//! use fdp_noise::{discrete, NoiseRng};
//! assert_eq!(timing::current(), SamplerTiming::Padded); // the default
//! let padded = discrete::discrete_laplace(&mut NoiseRng::seeded(7), 3, 2);
//! timing::allow_variable_time_for_simulation();          // a simulation opts in
//! let fast = discrete::discrete_laplace(&mut NoiseRng::seeded(7), 3, 2);
//! assert_eq!(padded, fast);                               // the same draw, faster
//! ```

use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};

use serde::{Deserialize, Serialize};

/// How the exact samplers spend their time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SamplerTiming {
    /// Fixed work (Ratliff & Vadhan padding): the operations executed do not depend on the value
    /// drawn, except with probability < 2^-32 per draw. The default, and what releases use.
    #[default]
    Padded,
    /// The discrete Laplace divides by a non-power-of-two `s` with the hardware's u128 `/`: a little
    /// faster for those scales only, and the running time
    /// depends on the value drawn (a timing side channel). For simulations only.
    Variable,
}

impl SamplerTiming {
    /// What a release serialised before the mode was recorded was drawn in: the samplers were
    /// variable-time then.
    pub fn unrecorded() -> Self {
        Self::Variable
    }

    /// `padded` or `variable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Padded => "padded",
            Self::Variable => "variable",
        }
    }
}

impl std::fmt::Display for SamplerTiming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

const PADDED: u8 = 0;
const VARIABLE: u8 = 1;

static MODE: AtomicU8 = AtomicU8::new(PADDED);

thread_local! {
    /// A mode for this thread that takes precedence over the process-wide one: set to `Padded` by
    /// [`padded_on_this_thread`] (and to either mode by this crate's unit tests).
    static OVERRIDE: Cell<Option<SamplerTiming>> = const { Cell::new(None) };
}

/// The mode the samplers called from this thread run in now: the process-wide mode, unless this
/// thread is inside [`padded_on_this_thread`].
#[inline]
pub fn current() -> SamplerTiming {
    if let Some(mode) = OVERRIDE.with(Cell::get) {
        return mode;
    }
    match MODE.load(Ordering::Relaxed) {
        VARIABLE => SamplerTiming::Variable,
        _ => SamplerTiming::Padded,
    }
}

/// **Opt in to variable-time sampling for the whole process**: for reproductions, black-box audits,
/// law tests and benchmarks that make many thousands of draws and publish nothing about a real
/// person. The draws (and so every seeded result) are unchanged; the running time of each draw
/// then depends on its value, so a process that serves releases to anyone who can time them must
/// not call this. Releases made afterwards record `sampler_timing: variable`.
pub fn allow_variable_time_for_simulation() {
    MODE.store(VARIABLE, Ordering::Relaxed);
}

/// Back to the default fixed-work sampling for the whole process.
pub fn require_padded() {
    MODE.store(PADDED, Ordering::Relaxed);
}

/// Runs `f` with the samplers called **from this thread** in fixed work, whatever the process-wide
/// mode (samplers that `f` runs on other threads, e.g. through rayon, follow the process-wide mode).
/// For measuring the padded samplers inside a process that opted in to variable time, such as
/// `examples/benchmarks/timing_channel.rs` run among the other examples' tests. It can only add padding.
pub fn padded_on_this_thread<T>(f: impl FnOnce() -> T) -> T {
    set_on_this_thread(SamplerTiming::Padded, f)
}

fn set_on_this_thread<T>(mode: SamplerTiming, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<SamplerTiming>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OVERRIDE.with(|o| o.set(self.0));
        }
    }
    let _restore = Restore(OVERRIDE.with(|o| o.replace(Some(mode))));
    f()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::SamplerTiming;

    /// Runs `f` on this thread in `mode` (this crate's unit tests run in parallel threads of one
    /// process and must not flip each other's mode).
    pub(crate) fn in_mode<T>(mode: SamplerTiming, f: impl FnOnce() -> T) -> T {
        super::set_on_this_thread(mode, f)
    }

    #[test]
    fn the_default_is_padded_and_an_override_is_per_thread() {
        assert_eq!(SamplerTiming::default(), SamplerTiming::Padded);
        assert_eq!(in_mode(SamplerTiming::Variable, super::current), SamplerTiming::Variable);
        assert_eq!(SamplerTiming::unrecorded().to_string(), "variable");
        let nested = in_mode(SamplerTiming::Variable, || super::padded_on_this_thread(super::current));
        assert_eq!(nested, SamplerTiming::Padded);
    }
}
