//! Which accounted release each noise draw serves, counted for tests.
//!
//! Every noise function of this crate ([`GridRelease::add_to`](super::GridRelease::add_to),
//! [`Noise::add_to`](super::Noise::add_to), [`Noise::sample_into`](super::Noise::sample_into),
//! the exact sums' release) takes the label of the release it serves: the label its event
//! carries in the ledger or the model's event tree. With the `tally` feature (for tests; off
//! by default, and then nothing is counted), each call is counted under its label on the
//! calling thread, and `take` returns the counts and clears them. A test then checks the
//! draws against the tree: a draw whose label names no event, and an event that no draw
//! served, are both failures (`crates/dp-glm/tests/draws.rs`).

#[cfg(feature = "tally")]
use std::cell::RefCell;
#[cfg(feature = "tally")]
use std::collections::BTreeMap;

#[cfg(feature = "tally")]
thread_local! {
    static DRAWS: RefCell<BTreeMap<String, u64>> = const { RefCell::new(BTreeMap::new()) };
}

/// Counts one noise call for the release `label` (a no-op without the `tally` feature): the
/// noise functions of this crate call it, and so does a mechanism that samples its output
/// by other means (an exponential mechanism's draw).
#[cfg_attr(not(feature = "tally"), allow(unused_variables))]
pub fn count(label: &str) {
    #[cfg(feature = "tally")]
    DRAWS.with(|d| *d.borrow_mut().entry(label.to_string()).or_default() += 1);
}

/// The noise calls counted on this thread since the last call, by release label, and clears
/// them.
#[cfg(feature = "tally")]
pub fn take() -> BTreeMap<String, u64> {
    DRAWS.with(|d| std::mem::take(&mut *d.borrow_mut()))
}
