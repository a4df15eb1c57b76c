//! Random number generators: a CSPRNG for real releases, a seeded stream for experiments.
//!
//! Every randomised function of this crate takes its generator explicitly (`&mut impl Rng`).
//! **Real releases must use [`secure_rng`]**: the privacy guarantee of a noise mechanism
//! assumes the noise is unpredictable, which a generator with a known or guessable seed is
//! not. [`seeded_rng`] exists so that experiments, figures and tests are reproducible.

use rand::SeedableRng;
use rand::rngs::{StdRng, SysRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::error::{Error, Result};

/// The cryptographically secure generator returned by [`secure_rng`]: rand's standard CSPRNG
/// (currently ChaCha12; the algorithm may change between `rand` versions).
pub type SecureRng = StdRng;

/// The fast, reproducible generator returned by [`seeded_rng`]: Xoshiro256++.
pub type SeededRng = Xoshiro256PlusPlus;

/// A CSPRNG seeded from the operating system's entropy source. Use it for every release
/// whose privacy matters.
///
/// # Errors
/// [`Error::Entropy`] when the operating system cannot provide entropy.
pub fn secure_rng() -> Result<SecureRng> {
    StdRng::try_from_rng(&mut SysRng).map_err(|e| Error::Entropy(e.to_string()))
}

/// A Xoshiro256++ stream determined by `seed`, for reproducible experiments and tests.
///
/// Not cryptographically secure and fully determined by the seed: **never use it for a real
/// private release** — use [`secure_rng`].
pub fn seeded_rng(seed: u64) -> SeededRng {
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn seeded_is_reproducible_and_secure_is_not() {
        let (mut a, mut b) = (seeded_rng(7), seeded_rng(7));
        assert_eq!(a.next_u64(), b.next_u64());
        assert_ne!(seeded_rng(7).next_u64(), seeded_rng(8).next_u64());
        let mut s1 = secure_rng().unwrap();
        let mut s2 = secure_rng().unwrap();
        // Two OS-seeded streams collide with probability 2^-128.
        assert_ne!(
            (s1.next_u64(), s1.next_u64()),
            (s2.next_u64(), s2.next_u64())
        );
    }
}
