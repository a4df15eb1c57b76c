//! A privacy budget shared by many fits on the same rows: a total `(ε, δ)`, and the privacy
//! event tree of every fit recorded so far. Each fit is checked *before* it reads any data,
//! from its public target alone, and recorded after it, before anything it made is released.
//!
//! The budget lives in memory ([`SharedBudget::in_memory`]) or in a file
//! ([`SharedBudget::create`], [`SharedBudget::open`]) that several processes may share: a fit
//! holds an exclusive lock on `FILE.lock` from its check until its record, and the file is
//! replaced atomically, so two processes never lose an entry and a reader never sees half a
//! file. The file holds public parameters and events only (format `dpglm-budget/1`):
//!
//! ```json
//! {"format": "dpglm-budget/1", "epsilon": 1.0, "delta": 1e-5, "accountant": "pld",
//!  "fits": [{"label": "a.json", "epsilon": 0.5, "delta": 1e-6,
//!            "event": {"neighbouring": "replace-one", "event": {"...": "..."}}}]}
//! ```
//!
//! ```
//! use dp_accounting::Neighbouring;
//! use dp_glm::shared_budget::{Plan, SharedBudget};
//!
//! let budget = SharedBudget::in_memory(1.0, 1e-5)?;
//! let plan = Plan { epsilon: 0.5, delta: 1e-6, neighbouring: Neighbouring::ReplaceOne };
//! let reservation = budget.reserve(&plan)?; // before the fit reads its data
//! // ... fit, then record what it spent: `reservation.record(&event, accountant, "a.json")?`
//! # drop(reservation);
//! # Ok::<(), dp_glm::shared_budget::BudgetError>(())
//! ```
//!
//! # Privacy
//! A fit at target `(ε_f, δ_f)` is admitted when the recorded events, composed and priced at
//! `δ − δ_f`, cost `ε_r` with `ε_r + ε_f ≤ ε` (summed exactly). The recorded fits are then
//! `(ε_r, δ − δ_f)`-DP and the new fit `(ε_f, δ_f)`-DP, so by basic composition (Dwork and
//! Roth, 2014, Theorem 3.16, which holds for adaptively chosen mechanisms) all of them
//! together are `(ε, δ)`-DP under the budget's one neighbouring relation. A fit's event is
//! recorded only if it costs at most `ε_f` at `δ_f`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use dp_accounting::{AccountantKind, DELTA_MIN, Neighbouring, PrivacyEvent, price};
use serde::{Deserialize, Serialize};

use crate::model_file::StoredEvent;

/// The format tag of a budget file.
pub const FORMAT: &str = "dpglm-budget/1";

/// Why a budget cannot be opened, admit a fit, or record one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    /// A total, a fit's target or a file's content is not valid.
    #[error("{0}")]
    Invalid(String),
    /// The budget file cannot be read, locked or written.
    #[error("budget file {path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// The fit would take the recorded fits past the budget.
    #[error(
        "the budget{at} cannot pay for this fit: it asks for epsilon = {asked} at delta = {delta:e}, \
         but {left} ({fits} fit(s) recorded; budget epsilon = {total_epsilon}, delta = \
         {total_delta:e})"
    )]
    Exceeded {
        /// " in FILE", or empty for an in-memory budget.
        at: String,
        /// The fit's target ε.
        asked: f64,
        /// The fit's target δ.
        delta: f64,
        /// What is left, in words.
        left: String,
        /// How many fits are recorded.
        fits: usize,
        /// The budget's ε.
        total_epsilon: f64,
        /// The budget's δ.
        total_delta: f64,
    },
    /// The fit's relation differs from the recorded fits'.
    #[error(
        "the budget{at} records fits under the {recorded} relation, and this fit is stated under \
         {asked}: relations must not be mixed (set the fit's neighbouring relation to {recorded})"
    )]
    Relation {
        /// " in FILE", or empty.
        at: String,
        /// The recorded fits' relation.
        recorded: Neighbouring,
        /// The fit's.
        asked: Neighbouring,
    },
    /// The recorded events, or the fit's event, could not be priced.
    #[error("the budget's events cannot be priced: {0}")]
    Pricing(#[from] dp_accounting::Error),
}

/// Result of budget operations.
pub type Result<T> = std::result::Result<T, BudgetError>;

/// A fit's public target, known before it reads data: the `(ε, δ)` it is calibrated to meet
/// and its neighbouring relation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Target ε.
    pub epsilon: f64,
    /// Target δ.
    pub delta: f64,
    /// The relation of its guarantee.
    pub neighbouring: Neighbouring,
}

/// One recorded fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitRecord {
    /// A public label (the model's path, or one the caller gives).
    pub label: String,
    /// The fit's target ε (what it was admitted for).
    pub epsilon: f64,
    /// The fit's target δ.
    pub delta: f64,
    /// The event tree the fit spent.
    pub event: StoredEvent,
}

/// The content of a budget: its totals, accountant and recorded fits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct State {
    format: String,
    epsilon: f64,
    delta: f64,
    accountant: String,
    fits: Vec<FitRecord>,
}

/// What a budget has spent: the recorded events composed and priced at its δ.
#[derive(Debug, Clone, PartialEq)]
pub struct Spent {
    /// ε of the composition at the budget's δ (0 with no fits), an upper bound.
    pub epsilon: f64,
    /// The number of fits recorded.
    pub fits: usize,
}

/// A privacy budget shared by many fits ([module docs](self)). Clones share one budget.
#[derive(Debug, Clone)]
pub struct SharedBudget {
    path: Option<PathBuf>,
    epsilon: f64,
    delta: f64,
    accountant: AccountantKind,
    memory: Arc<Mutex<Vec<FitRecord>>>,
}

fn check_totals(epsilon: f64, delta: f64) -> Result<()> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(BudgetError::Invalid(format!(
            "invalid budget epsilon = {epsilon} (must be finite and > 0)"
        )));
    }
    if !(DELTA_MIN..1.0).contains(&delta) {
        return Err(BudgetError::Invalid(format!(
            "invalid budget delta = {delta:e} (must be in [{DELTA_MIN:e}, 1))"
        )));
    }
    Ok(())
}

/// Whether `a + b ≤ limit` for the exact (unrounded) sum: the sum's rounding error is
/// recovered exactly (Knuth's two-sum).
fn sum_at_most(a: f64, b: f64, limit: f64) -> bool {
    let s = a + b;
    let bb = s - a;
    let err = (a - (s - bb)) + (b - bb);
    s < limit || (s == limit && err <= 0.0)
}

impl SharedBudget {
    /// A budget of `(epsilon, delta)` held in memory, priced by the PLD accountant.
    ///
    /// # Errors
    /// `epsilon` not finite and positive, or `delta` outside `[DELTA_MIN, 1)`.
    pub fn in_memory(epsilon: f64, delta: f64) -> Result<Self> {
        check_totals(epsilon, delta)?;
        Ok(Self {
            path: None,
            epsilon,
            delta,
            accountant: AccountantKind::Pld,
            memory: Arc::new(Mutex::new(Vec::new())),
        })
    }

    /// A new budget file at `path` (which must not exist) of `(epsilon, delta)`, whose
    /// recorded events `accountant` prices.
    ///
    /// # Errors
    /// Invalid totals, or the file exists or cannot be written.
    pub fn create(
        path: &Path,
        epsilon: f64,
        delta: f64,
        accountant: AccountantKind,
    ) -> Result<Self> {
        check_totals(epsilon, delta)?;
        let budget = Self {
            path: Some(path.to_path_buf()),
            epsilon,
            delta,
            accountant,
            memory: Arc::new(Mutex::new(Vec::new())),
        };
        let _lock = budget.lock()?;
        if path.symlink_metadata().is_ok() {
            return Err(budget
                .io("already exists (open it, or choose a new path for a new budget)".to_owned()));
        }
        budget.write(&budget.state(Vec::new()))?;
        Ok(budget)
    }

    /// The budget file at `path`.
    ///
    /// # Errors
    /// The file cannot be read or is not a valid budget file.
    pub fn open(path: &Path) -> Result<Self> {
        let mut budget = Self {
            path: Some(path.to_path_buf()),
            epsilon: 1.0,
            delta: 0.5,
            accountant: AccountantKind::Pld,
            memory: Arc::new(Mutex::new(Vec::new())),
        };
        let state = budget.read()?;
        budget.epsilon = state.epsilon;
        budget.delta = state.delta;
        budget.accountant = state.accountant.parse().map_err(|_| {
            budget.io(format!(
                "invalid accountant {:?} (pld, rdp, zcdp or exact)",
                state.accountant
            ))
        })?;
        Ok(budget)
    }

    /// The total ε.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The total δ.
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// The accountant that prices the recorded events.
    pub fn accountant(&self) -> AccountantKind {
        self.accountant
    }

    /// The file, for a file-backed budget.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The recorded fits.
    ///
    /// # Errors
    /// The file cannot be read.
    pub fn fits(&self) -> Result<Vec<FitRecord>> {
        match &self.path {
            Some(_) => Ok(self.read()?.fits),
            None => Ok(self.memory()?.clone()),
        }
    }

    /// What the recorded fits have spent, priced together at the budget's δ.
    ///
    /// # Privacy
    /// [`dp_accounting::price`] on the composition of the recorded events at the budget's
    /// δ, by its accountant.
    ///
    /// # Errors
    /// The file cannot be read, or the events cannot be priced.
    pub fn spent(&self) -> Result<Spent> {
        let fits = self.fits()?;
        Ok(Spent {
            epsilon: self.price_recorded(&fits, self.delta)?,
            fits: fits.len(),
        })
    }

    /// The most ε a fit at target δ `delta` may ask for now.
    ///
    /// # Privacy
    /// `ε − ε_r`, rounded down, where `ε_r` prices the recorded fits at `δ_budget − delta`
    /// ([module docs](self)); `None` when no δ is left for the recorded fits.
    ///
    /// # Errors
    /// The file cannot be read, or the events cannot be priced.
    pub fn left_for(&self, delta: f64) -> Result<Option<f64>> {
        let fits = self.fits()?;
        self.left(&fits, delta)
    }

    fn left(&self, fits: &[FitRecord], delta: f64) -> Result<Option<f64>> {
        Ok(self.recorded_cost(fits, delta)?.and_then(|(_, spent)| {
            let left = self.epsilon - spent;
            (left > 0.0).then(|| left.next_down().max(0.0))
        }))
    }

    /// The δ left to the recorded fits beside a fit at δ `delta`, and their ε at it; `None`
    /// when no δ is left to them.
    fn recorded_cost(&self, fits: &[FitRecord], delta: f64) -> Result<Option<(f64, f64)>> {
        let rest = self.delta - delta;
        let floor = if fits.is_empty() { 0.0 } else { DELTA_MIN };
        if rest.is_nan() || rest <= 0.0 || rest < floor {
            return Ok(None);
        }
        Ok(Some((rest, self.price_recorded(fits, rest)?)))
    }

    fn price_recorded(&self, fits: &[FitRecord], delta: f64) -> Result<f64> {
        if fits.is_empty() {
            return Ok(0.0);
        }
        let events = fits.iter().map(|f| f.event.0.clone()).collect();
        let tree = PrivacyEvent::composed(events)?;
        Ok(price(&tree, self.accountant, delta)?.epsilon)
    }

    /// Admits a fit of target `plan`, before it reads any data, or says what is left. The
    /// returned reservation holds the budget (other fits wait) until it is recorded or
    /// dropped; dropping it records nothing.
    ///
    /// # Privacy
    /// Admits only what keeps every recorded fit and this one `(ε, δ)`-DP together
    /// ([module docs](self)).
    ///
    /// # Errors
    /// [`BudgetError::Exceeded`] saying what is left, [`BudgetError::Relation`] for a
    /// relation other than the recorded fits', an invalid target, or an unreadable file.
    pub fn reserve(&self, plan: &Plan) -> Result<Reservation<'_>> {
        let guard = match &self.path {
            Some(_) => Held::File {
                _lock: self.lock()?,
            },
            None => Held::Memory(self.memory()?),
        };
        let fits = match &guard {
            Held::File { .. } => self.read()?.fits,
            Held::Memory(m) => (*m).clone(),
        };
        let valid_delta = plan.delta > 0.0 && plan.delta < 1.0;
        if !(plan.epsilon.is_finite() && plan.epsilon > 0.0 && valid_delta) {
            return Err(BudgetError::Invalid(format!(
                "invalid fit target epsilon = {}, delta = {:e}",
                plan.epsilon, plan.delta
            )));
        }
        if let Some(first) = fits.first() {
            let recorded = first.event.0.neighbouring();
            if recorded != plan.neighbouring {
                return Err(BudgetError::Relation {
                    at: self.at(),
                    recorded,
                    asked: plan.neighbouring,
                });
            }
        }
        let admitted = match self.recorded_cost(&fits, plan.delta)? {
            None => Err(format!(
                "no delta is left for it: a fit's delta must be below the budget's delta \
                 less what the recorded fits need (at least {DELTA_MIN:e})"
            )),
            Some((_, spent)) if sum_at_most(spent, plan.epsilon, self.epsilon) => Ok(()),
            Some((rest, spent)) => {
                let left = (self.epsilon - spent).next_down().max(0.0);
                Err(format!(
                    "epsilon = {left} is left for a fit at that delta (the recorded fits cost \
                     epsilon = {spent} at delta = {rest:e})"
                ))
            }
        };
        match admitted {
            Ok(()) => Ok(Reservation {
                budget: self,
                plan: *plan,
                fits,
                guard,
            }),
            Err(left) => Err(BudgetError::Exceeded {
                at: self.at(),
                asked: plan.epsilon,
                delta: plan.delta,
                left,
                fits: fits.len(),
                total_epsilon: self.epsilon,
                total_delta: self.delta,
            }),
        }
    }

    fn at(&self) -> String {
        self.path
            .as_ref()
            .map(|p| format!(" in {}", p.display()))
            .unwrap_or_default()
    }

    fn io(&self, message: String) -> BudgetError {
        BudgetError::Io {
            path: self.path.clone().unwrap_or_default(),
            message,
        }
    }

    fn memory(&self) -> Result<MutexGuard<'_, Vec<FitRecord>>> {
        self.memory
            .lock()
            .map_err(|_| BudgetError::Invalid("the budget's lock was poisoned".to_owned()))
    }

    fn state(&self, fits: Vec<FitRecord>) -> State {
        State {
            format: FORMAT.to_owned(),
            epsilon: self.epsilon,
            delta: self.delta,
            accountant: self.accountant.as_str().to_owned(),
            fits,
        }
    }

    /// An exclusive lock on the file's `.lock` sibling, held while the returned file lives
    /// (the budget file itself is replaced by renaming, so it cannot carry the lock).
    fn lock(&self) -> Result<File> {
        let path = self.path.as_deref().unwrap_or(Path::new(""));
        let mut name = path.as_os_str().to_owned();
        name.push(".lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&name)
            .map_err(|e| self.io(format!("cannot open its lock file: {e}")))?;
        file.lock()
            .map_err(|e| self.io(format!("cannot lock it: {e}")))?;
        Ok(file)
    }

    fn read(&self) -> Result<State> {
        let path = self.path.as_deref().unwrap_or(Path::new(""));
        let meta = path
            .symlink_metadata()
            .map_err(|e| self.io(format!("cannot be read: {e}")))?;
        if !meta.is_file() {
            return Err(self.io("is not a regular file".to_owned()));
        }
        let text =
            std::fs::read_to_string(path).map_err(|e| self.io(format!("cannot be read: {e}")))?;
        let state: State = serde_json::from_str(&text)
            .map_err(|e| self.io(format!("is not a valid budget file: {e}")))?;
        if state.format != FORMAT {
            return Err(self.io(format!("has format {:?}, not {FORMAT:?}", state.format)));
        }
        check_totals(state.epsilon, state.delta).map_err(|e| self.io(e.to_string()))?;
        if let Some(f) = state
            .fits
            .iter()
            .find(|f| f.event.0.neighbouring() != state.fits[0].event.0.neighbouring())
        {
            return Err(self.io(format!(
                "records fit {:?} under another relation than its first fit",
                f.label
            )));
        }
        Ok(state)
    }

    fn write(&self, state: &State) -> Result<()> {
        let path = self.path.as_deref().unwrap_or(Path::new(""));
        let text = serde_json::to_string_pretty(state)
            .map_err(|e| self.io(format!("cannot be serialised: {e}")))?;
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(format!(".tmp-{}", std::process::id()));
        let tmp = PathBuf::from(tmp);
        let written = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .and_then(|mut f| {
                f.write_all(text.as_bytes())?;
                f.write_all(b"\n")?;
                f.sync_all()
            })
            .and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(self.io(format!("cannot be written: {e}")));
        }
        Ok(())
    }
}

/// What a reservation holds: the file lock (released when dropped), or the in-memory
/// budget's guard.
#[derive(Debug)]
enum Held<'a> {
    File { _lock: File },
    Memory(MutexGuard<'a, Vec<FitRecord>>),
}

/// An admitted fit ([`SharedBudget::reserve`]), holding the budget until it records.
#[derive(Debug)]
pub struct Reservation<'a> {
    budget: &'a SharedBudget,
    plan: Plan,
    fits: Vec<FitRecord>,
    guard: Held<'a>,
}

impl Reservation<'_> {
    /// The admitted target.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Records the fit's `event` under `label`; call it before the fit's output is
    /// released, and release nothing if it fails. `accountant` is the one whose price of
    /// `event` the fit reported.
    ///
    /// # Privacy
    /// Records only an event of the admitted relation costing at most the admitted `ε_f`
    /// at `δ_f` ([`dp_accounting::price`] by `accountant`), the premise of the
    /// [module](self)'s composition argument.
    ///
    /// # Errors
    /// The event is of another relation or costs more than admitted, or the file cannot be
    /// written.
    pub fn record(
        self,
        event: &PrivacyEvent,
        accountant: AccountantKind,
        label: &str,
    ) -> Result<Spent> {
        let Reservation {
            budget,
            plan,
            mut fits,
            mut guard,
        } = self;
        if event.neighbouring() != plan.neighbouring {
            return Err(BudgetError::Relation {
                at: budget.at(),
                recorded: plan.neighbouring,
                asked: event.neighbouring(),
            });
        }
        let cost = price(event, accountant, plan.delta)?.epsilon;
        if cost > plan.epsilon {
            return Err(BudgetError::Invalid(format!(
                "the fit's event costs epsilon = {cost} at delta = {:e} by the {accountant} \
                 accountant, more than the epsilon = {} it was admitted for; nothing was recorded",
                plan.delta, plan.epsilon
            )));
        }
        fits.push(FitRecord {
            label: label.to_owned(),
            epsilon: plan.epsilon,
            delta: plan.delta,
            event: StoredEvent(event.clone()),
        });
        // Priced before anything is written: a failure records nothing.
        let spent = budget.price_recorded(&fits, budget.delta)?;
        match &mut guard {
            Held::File { .. } => budget.write(&budget.state(fits.clone()))?,
            Held::Memory(m) => m.clone_from(&fits),
        }
        drop(guard);
        Ok(Spent {
            epsilon: spent,
            fits: fits.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test
    use super::*;
    use dp_accounting::{Event, Mechanism};

    /// A Gaussian release of sensitivity 1 whose σ meets `(epsilon, delta)` (by the closed
    /// form), as a fit's whole event under add/remove.
    fn gaussian_fit(epsilon: f64, delta: f64) -> PrivacyEvent {
        let sigma = dp_accounting::gaussian_sigma(epsilon, delta, 1.0).unwrap();
        let m = Mechanism::gaussian(sigma, 1.0).unwrap();
        PrivacyEvent::new(Neighbouring::AddRemove, Event::release(m, 1, "fit")).unwrap()
    }

    const PLAN: Plan = Plan {
        epsilon: 0.5,
        delta: 1e-6,
        neighbouring: Neighbouring::AddRemove,
    };
    const PLD: AccountantKind = AccountantKind::Pld;

    #[test]
    fn refuses_the_third_of_three_half_epsilon_fits_under_one() {
        let b = SharedBudget::in_memory(1.0, 1e-5).unwrap();
        for i in 0..2 {
            let r = b.reserve(&PLAN).unwrap();
            let spent = r
                .record(&gaussian_fit(0.49, 1e-6), PLD, &format!("fit {i}"))
                .unwrap();
            assert_eq!(spent.fits, i + 1);
            assert!(spent.epsilon <= 1.0, "{spent:?}");
        }
        let err = b.reserve(&PLAN).unwrap_err();
        let BudgetError::Exceeded { left, fits, .. } = &err else {
            panic!("{err}");
        };
        assert_eq!(*fits, 2);
        // What is left is what the two fits leave at δ − δ_f: less than 0.5, more than 0.
        let left_eps = b.left_for(1e-6).unwrap().unwrap();
        assert!(left_eps > 0.0 && left_eps < 0.5, "{left_eps}");
        assert!(left.contains(&left_eps.to_string()), "{err}");
        // A smaller fit still fits.
        let small = Plan {
            epsilon: left_eps,
            ..PLAN
        };
        drop(b.reserve(&small).unwrap());
    }

    #[test]
    fn admits_exactly_the_budget_and_no_more() {
        assert!(sum_at_most(0.5, 0.5, 1.0));
        // 1 + 1e-17 rounds to 1.0, but the exact sum is above it.
        assert!(!sum_at_most(1.0, 1e-17, 1.0));
        assert!(sum_at_most(1.0, -1e-17, 1.0));
        assert!(!sum_at_most(0.5, 0.5, 1.0f64.next_down()));
    }

    #[test]
    fn a_fit_under_another_relation_or_over_its_plan_is_refused() {
        let b = SharedBudget::in_memory(2.0, 1e-5).unwrap();
        b.reserve(&PLAN)
            .unwrap()
            .record(&gaussian_fit(0.49, 1e-6), PLD, "a")
            .unwrap();
        let other = Plan {
            neighbouring: Neighbouring::ReplaceOne,
            ..PLAN
        };
        assert!(matches!(
            b.reserve(&other).unwrap_err(),
            BudgetError::Relation { .. }
        ));
        let err = b
            .reserve(&PLAN)
            .unwrap()
            .record(&gaussian_fit(0.8, 1e-6), PLD, "b")
            .unwrap_err();
        assert!(
            err.to_string().contains("more than the epsilon = 0.5"),
            "{err}"
        );
        assert_eq!(b.fits().unwrap().len(), 1, "nothing recorded");
        // A fit asking all the budget's δ leaves none for the recorded fit.
        let greedy = Plan {
            delta: 1e-5,
            ..PLAN
        };
        assert!(
            b.reserve(&greedy)
                .unwrap_err()
                .to_string()
                .contains("no delta")
        );
    }

    #[test]
    fn a_file_budget_round_trips_and_refuses_bad_files() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("budget.json");
        let b = SharedBudget::create(&path, 1.0, 1e-5, AccountantKind::Pld).unwrap();
        assert!(SharedBudget::create(&path, 1.0, 1e-5, AccountantKind::Pld).is_err());
        let event = gaussian_fit(0.49, 1e-6);
        b.reserve(&PLAN)
            .unwrap()
            .record(&event, PLD, "a.json")
            .unwrap();
        let again = SharedBudget::open(&path).unwrap();
        assert_eq!((again.epsilon(), again.delta()), (1.0, 1e-5));
        let fits = again.fits().unwrap();
        assert_eq!(fits.len(), 1);
        assert_eq!(fits[0].event.0, event);
        assert_eq!(fits[0].label, "a.json");
        assert_eq!(again.spent().unwrap(), b.spent().unwrap());
        std::fs::write(&path, "{\"format\": \"dpglm-budget/1\"}").unwrap();
        let err = SharedBudget::open(&path).unwrap_err().to_string();
        assert!(
            err.contains("budget.json") && err.contains("not a valid"),
            "{err}"
        );
        assert!(SharedBudget::open(&dir.path().join("none.json")).is_err());
        assert!(SharedBudget::in_memory(f64::NAN, 1e-5).is_err());
        assert!(SharedBudget::in_memory(1.0, 1.0).is_err());
    }

    #[test]
    fn two_threads_sharing_a_file_lose_no_entry() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("budget.json");
        SharedBudget::create(&path, 100.0, 1e-3, AccountantKind::Rdp).unwrap();
        let event = gaussian_fit(0.49, 1e-6);
        std::thread::scope(|s| {
            for t in 0..2 {
                let (path, event) = (&path, &event);
                s.spawn(move || {
                    // Each thread opens the file on its own, as two processes would.
                    let b = SharedBudget::open(path).unwrap();
                    for i in 0..5 {
                        let r = b.reserve(&PLAN).unwrap();
                        r.record(event, PLD, &format!("{t}-{i}")).unwrap();
                    }
                });
            }
        });
        let fits = SharedBudget::open(&path).unwrap().fits().unwrap();
        assert_eq!(fits.len(), 10);
    }
}
