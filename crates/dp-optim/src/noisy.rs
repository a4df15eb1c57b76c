//! Private first-order methods over [`ClippedSum`]: noisy full-batch gradient descent
//! ([`NoisyGd`]) and DP-SGD ([`DpSgd`]).
//!
//! Each step releases one noisy clipped gradient sum; everything after that (dividing by the
//! batch size, adding a regulariser's gradient, momentum or Adam, projection, averaging) is
//! post-processing.
//!
//! **Every** step's Gaussian noise — not only the last — is an exact release
//! ([`SumRelease`]): each clipped per-example term is quantised to integers on the noise's
//! power-of-two grid with its norm bound enforced on the integers, the terms are summed exactly
//! in integer arithmetic ([`ClippedSum::exact_clipped_sum`]), and exact discrete Gaussian noise
//! is added to the integer sum before the one conversion to `f64` (the `exact` module's
//! fixed-point argument). The privacy argument treats each noisy sum as released: the final
//! iterate is a post-processing of all of them, so a step whose computed output leaked — through
//! its low-order bits, or through a floating-point sum whose sensitivity exceeds the recorded
//! one — would leak into the iterate that is returned. The quantisation's extra sensitivity is
//! in the ledger (the recorded noise multiplier is the one [`crate::sum_multiplier`] returns,
//! `σC/Δ` with `Δ ≤ C + γ√d/2`, a relative `≈ σ√d·2^-25` below `σ`), and so is the discrete
//! noise: each recorded mechanism carries its discrete Gaussian, which the PLD and exact
//! accountants turn into their adjustment (noise module docs, § Privacy). The Gamma-ball
//! option of DP-SGD is the exception: floating-point noise on the `f64` sum, experiments only.
//!
//! The solver records what it released in [`Solution::ledger`] and never
//! states an ε: the caller prices the ledger with an accountant (MATH §5).
//!
//! Privacy preconditions the caller must meet (the solver cannot check them):
//! * each term of the [`ClippedSum`] oracle depends only on its own record (and the iterate);
//!   its norm bound is enforced on the quantised integers, so one record changes the released
//!   integer sum by at most the recorded sensitivity (add/remove), or twice it (replace-one);
//! * the starting point, the projection and the regulariser do not depend on the private
//!   data;
//! * the generator is a CSPRNG ([`crate::secure_rng`]) for real releases;
//! * the number of examples `n` is public (it divides the noisy sums), or DP-SGD is given it
//!   as a public value ([`DpSgd::public_size()`]).

use dp_accounting::{Ledger, Mechanism, Neighbouring};
use ndarray::{Array1, ArrayView1, ArrayViewMut1, Zip};
use rand::Rng;
use rand::distr::Distribution;
use rand::seq::SliceRandom;
use rand_distr::Exp1;

use crate::error::{Error, Result, count, decay, non_negative, positive, same_dim, unit_rate};
use crate::exact::{ExactSum, SumRelease, sum_multiplier};
use crate::noise::Noise;
use crate::objective::{ClippedSum, Projection};
use crate::solution::{IterationInfo, Observer, Solution, Status};
use crate::step::{Averager, Averaging, StepSize};

/// Label of the ledger entries the private solvers record.
pub const NOISY_GRADIENT_LABEL: &str = "noisy gradient";

/// The gradient of a data-independent regulariser `r(θ)`, added to the (averaged) noisy
/// gradient: the private methods minimise `(1/n)Σℓ_i(θ) + r(θ)`.
///
/// Implemented by [`NoRegulariser`], [`L2Regulariser`] and by every closure
/// `Fn(ArrayView1<f64>, ArrayViewMut1<f64>)` that adds `∇r(θ)` to its second argument.
///
/// # Privacy
/// The regulariser sees only the current iterate; it must not read the private data
/// (a closure capturing the data would break the guarantee the ledger describes).
pub trait Regulariser {
    /// `grad += ∇r(x)`.
    fn add_grad(&self, x: ArrayView1<'_, f64>, grad: ArrayViewMut1<'_, f64>);

    /// Checks the regulariser's parameters. Defaults to `Ok`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a malformed regulariser.
    fn check(&self) -> Result<()> {
        Ok(())
    }
}

/// No regulariser: `r = 0`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct NoRegulariser;

impl Regulariser for NoRegulariser {
    fn add_grad(&self, _x: ArrayView1<'_, f64>, _grad: ArrayViewMut1<'_, f64>) {}
}

/// `r(θ) = (λ/2)‖θ‖²`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct L2Regulariser {
    /// λ ≥ 0.
    pub lambda: f64,
}

impl Regulariser for L2Regulariser {
    fn add_grad(&self, x: ArrayView1<'_, f64>, mut grad: ArrayViewMut1<'_, f64>) {
        grad.scaled_add(self.lambda, &x);
    }

    fn check(&self) -> Result<()> {
        non_negative("lambda", self.lambda).map(drop)
    }
}

impl<F> Regulariser for F
where
    F: Fn(ArrayView1<'_, f64>, ArrayViewMut1<'_, f64>),
{
    fn add_grad(&self, x: ArrayView1<'_, f64>, grad: ArrayViewMut1<'_, f64>) {
        self(x, grad)
    }
}

fn norm(v: &Array1<f64>) -> f64 {
    v.dot(v).sqrt()
}

/// Noisy (projected) full-batch gradient descent (paper 000, Alg. 1; paper 004):
///
/// `g_t = (Σ_i clip_C(∇ℓ_i(θ_t)) + N(0, σ²C²I)) / n + ∇r(θ_t)`,
/// `θ_{t+1} = Π(θ_t − η_t g_t)`, output per [`Averaging`].
///
/// # Privacy
/// Each of the `T` steps is a Gaussian mechanism with noise std `σC` on an exact integer sum
/// of per-record terms quantised on the noise grid `γ` ([`SumRelease`]: each term's norm is
/// at most `Δ = γR ≤ C + γ√d/2`, enforced on the integers, and exact discrete Gaussian noise is
/// added to the integer sum); the ledger holds `T × Mechanism::gaussian(σ·C, Δ)` (with the
/// release's discrete Gaussian attached, as in every ledger entry below) under the relation
/// the caller chose (`Δ` is the per-record bound: an accountant doubles it for replace-one,
/// MATH §1 and §5). `T` such Gaussians compose exactly into one (MATH §2).
/// A run stopped early by an observer records only the steps it released.
#[derive(Debug, Clone, PartialEq)]
pub struct NoisyGd {
    /// Step-size schedule.
    pub step: StepSize,
    /// Number of steps `T` (≥ 1).
    pub steps: usize,
    /// Clipping norm `C` (finite, > 0).
    pub clip: f64,
    /// Noise multiplier `σ` (finite, > 0): the noise std on the clipped sum is `σC`.
    pub noise_multiplier: f64,
    /// Returned point. Default: the last iterate.
    pub averaging: Averaging,
    /// The neighbouring relation the ledger is stated under.
    pub neighbouring: Neighbouring,
}

impl NoisyGd {
    /// Noisy GD with `T = steps` steps, clipping norm `clip`, noise multiplier `σ`, returning
    /// the last iterate, its ledger stated under `neighbouring`.
    pub fn new(
        step: StepSize,
        steps: usize,
        clip: f64,
        noise_multiplier: f64,
        neighbouring: Neighbouring,
    ) -> Self {
        Self {
            step,
            steps,
            clip,
            noise_multiplier,
            averaging: Averaging::Last,
            neighbouring,
        }
    }

    /// Sets the averaging mode.
    pub fn averaging(mut self, averaging: Averaging) -> Self {
        self.averaging = averaging;
        self
    }

    /// Runs `T` noisy steps from `x0` (projected first) and returns the point with its
    /// ledger.
    ///
    /// # Errors
    /// A bad hyper-parameter ([`Error::InvalidParameter`]), no examples
    /// ([`Error::EmptyData`]), `x0` of the wrong length ([`Error::DimensionMismatch`]), a
    /// malformed set or regulariser.
    pub fn minimize<S, G, P, R>(
        &self,
        oracle: &S,
        reg: &G,
        proj: &P,
        x0: ArrayView1<'_, f64>,
        rng: &mut R,
        mut observer: Option<&mut dyn Observer>,
    ) -> Result<Solution>
    where
        S: ClippedSum + ?Sized,
        G: Regulariser + ?Sized,
        P: Projection + ?Sized,
        R: Rng + ?Sized,
    {
        self.step.check()?;
        count("steps", self.steps)?;
        let clip = positive("clip", self.clip)?;
        let sigma = positive("noise_multiplier", self.noise_multiplier)?;
        self.averaging.check()?;
        reg.check()?;
        proj.check()?;
        let n = oracle.n_examples();
        if n == 0 {
            return Err(Error::EmptyData);
        }
        let d = oracle.dim();
        same_dim("x0", d, x0.len())?;
        // One record moves the exact sum by at most the release's sensitivity (`exact` module).
        let (release, _) = sum_multiplier(sigma, clip, d)?;
        let mechanism = release.mechanism()?;
        let mut sum = ExactSum::new(*release.quantiser());

        let mut x = x0.to_owned();
        proj.project(x.view_mut());
        let mut g = Array1::zeros(d);
        let mut avg = Averager::new(self.averaging, self.steps, d);
        let mut status = Status::IterationLimit;
        let mut released = 0u64;
        let mut iterations = 0;
        for t in 0..self.steps {
            oracle.exact_clipped_sum(x.view(), None, &mut sum);
            release.release(NOISY_GRADIENT_LABEL, rng, &mut sum, g.view_mut())?;
            released += 1;
            g /= n as f64;
            reg.add_grad(x.view(), g.view_mut());
            let eta = self.step.at(t);
            x.scaled_add(-eta, &g);
            proj.project(x.view_mut());
            iterations = t + 1;
            avg.push(t, x.view());
            if !report_step(observer.as_deref_mut(), t, &g, eta) {
                status = Status::StoppedByObserver;
                break;
            }
        }
        let mut ledger = Ledger::new(self.neighbouring);
        ledger.record(mechanism, released, NOISY_GRADIENT_LABEL);
        Ok(Solution {
            x: avg.finish(x),
            status,
            iterations,
            ledger: Some(ledger),
        })
    }
}

/// How DP-SGD draws its batches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BatchSchedule {
    /// Poisson sampling: every example joins each batch independently with probability
    /// `q ∈ (0, 1]`. Gradient estimate divided by the expected batch size `q·n`.
    ///
    /// # Privacy
    /// Ledger: one `Mechanism::subsampled_gaussian(z, q)` per step, `z = σC/Δ` the multiplier
    /// of the exact release ([`crate::sum_multiplier`], `Δ ≤ C + γ√d/2`), its discrete Gaussian
    /// attached (add/remove relation, `n` public), or one `Mechanism::gamma_ball(scale, q, d, C)` per step with
    /// [`NoiseDistribution::GammaBall`].
    Poisson {
        /// Sampling rate.
        q: f64,
    },
    /// One pass over a uniformly random permutation of the examples, in consecutive batches
    /// of `batch` (the last `n mod batch` examples of the permutation are not used); every
    /// example is used at most once. Runs `⌊n/batch⌋` steps with [`Length::Epochs`]`(1)`,
    /// or fewer with [`Length::Steps`].
    ///
    /// # Privacy
    /// Ledger: one `Mechanism::gaussian(zC, C)` per step (`z` as for Poisson: the ratio of std
    /// to sensitivity is that of `Gaussian(σC, Δ)`) under replace-one (the permutation does
    /// not depend on the data, so replacing one record changes the exact sum of exactly one
    /// batch by at most `2Δ`). Composing them sequentially, as the ledger does, is a valid
    /// but loose bound: since every record is seen by at most one step, the whole pass is as
    /// private as a single step (MATH §8), and amplification by shuffling (Feldman, McMillan,
    /// Talwar 2021; `dp_accounting::shuffle_epsilon`) may give a smaller ε. Applying either
    /// is the caller's decision.
    ShuffleOnce {
        /// Batch size `b`, `1 ≤ b ≤ n`.
        batch: usize,
    },
    /// Batches of exactly `batch` examples drawn uniformly without replacement from the `n`
    /// examples, independently at every step.
    ///
    /// # Privacy
    /// Ledger: one `Mechanism::subsampled_gaussian_without_replacement(z, b, n)` per step
    /// (`z` as for Poisson; replace-one relation).
    FixedSizeWithoutReplacement {
        /// Batch size `b`, `1 ≤ b ≤ n`.
        batch: usize,
    },
}

/// How long DP-SGD runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// A number of steps `T ≥ 1`.
    Steps(usize),
    /// A number of epochs `e ≥ 1`: `T = ⌈e/q⌉` steps for Poisson sampling (up to a relative
    /// rounding tolerance of 1e-9), `T = ⌈e·n/b⌉` for fixed-size batches; [`BatchSchedule::
    /// ShuffleOnce`] allows only one epoch, `T = ⌊n/b⌋`.
    Epochs(usize),
}

/// The first-order update applied to the noisy gradient estimate `g_t` (post-processing).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum UpdateRule {
    /// `θ ← Π(θ − η_t g_t)`.
    Sgd,
    /// Heavy ball: `v ← βv + g_t`, `θ ← Π(θ − η_t v)` (`v_0 = 0`, `β ∈ [0, 1)`).
    Momentum {
        /// Momentum coefficient β.
        beta: f64,
    },
    /// Adam (Kingma & Ba 2015), bias-corrected: `m ← β₁m + (1−β₁)g`, `v ← β₂v + (1−β₂)g²`,
    /// `θ ← Π(θ − η_t m̂/(√v̂ + ε))`, `m̂ = m/(1−β₁^{t+1})`, `v̂ = v/(1−β₂^{t+1})`.
    Adam {
        /// β₁ ∈ [0, 1).
        beta1: f64,
        /// β₂ ∈ [0, 1).
        beta2: f64,
        /// ε > 0.
        eps: f64,
    },
}

impl UpdateRule {
    /// Adam with the usual defaults β₁ = 0.9, β₂ = 0.999, ε = 1e-8.
    pub fn adam() -> Self {
        UpdateRule::Adam {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
        }
    }

    fn check(&self) -> Result<()> {
        match *self {
            UpdateRule::Sgd => Ok(()),
            UpdateRule::Momentum { beta } => decay("beta", beta).map(drop),
            UpdateRule::Adam { beta1, beta2, eps } => {
                decay("beta1", beta1)?;
                decay("beta2", beta2)?;
                positive("eps", eps).map(drop)
            }
        }
    }
}

/// The noise DP-SGD adds to each clipped batch sum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NoiseDistribution {
    /// `N(0, σ²C²I)`.
    Gaussian {
        /// Noise multiplier `σ` (finite, > 0).
        noise_multiplier: f64,
    },
    /// Paper 000's Gamma ball of absolute scale `s` (density `∝ exp(−‖z‖/s)`, so
    /// `E‖z‖ = d·s`), added to the clipped sum: each step is `(C/s)`-DP before sampling
    /// under add/remove. Poisson sampling only.
    GammaBall {
        /// Scale `s` (finite, > 0).
        scale: f64,
    },
}

/// DP-SGD (Abadi et al. 2016; MATH §5): at each step draw a batch `B_t`, release
/// `Σ_{i∈B_t} clip_C(∇ℓ_i(θ_t)) + Z_t` (for Gaussian noise the exact sum of the quantised terms
/// plus discrete Gaussian noise, [`SumRelease`]), and update with
/// `g_t = (that) / b̄ + ∇r(θ_t)`, where `b̄` is the expected batch size (`q·n` for Poisson,
/// `b` otherwise) and `Z_t` is [`NoiseDistribution`] noise.
///
/// # Privacy
/// See [`BatchSchedule`] for the mechanism recorded per step and its relation. Updates
/// (SGD, momentum, Adam), projection and averaging are post-processing.
#[derive(Debug, Clone, PartialEq)]
pub struct DpSgd {
    /// Batch sampling.
    pub schedule: BatchSchedule,
    /// Run length.
    pub length: Length,
    /// Step-size schedule.
    pub step: StepSize,
    /// Clipping norm `C` (finite, > 0).
    pub clip: f64,
    /// Noise law.
    pub noise: NoiseDistribution,
    /// First-order update. Default: plain SGD.
    pub update: UpdateRule,
    /// Returned point. Default: the last iterate.
    pub averaging: Averaging,
    /// The number of examples as a public value, when the caller knows it without counting
    /// the private data (under add/remove the true `n` is private): Poisson sampling then
    /// divides the noisy sums by `q·public_size` instead of `q·n` (the exact release's grid does
    /// not depend on the number of examples). Default `None`: the true `n`, treated as public.
    pub public_size: Option<usize>,
}

impl DpSgd {
    /// DP-SGD with Gaussian noise multiplier `σ`, plain SGD updates, returning the last
    /// iterate.
    pub fn new(
        schedule: BatchSchedule,
        length: Length,
        step: StepSize,
        clip: f64,
        noise_multiplier: f64,
    ) -> Self {
        Self {
            schedule,
            length,
            step,
            clip,
            noise: NoiseDistribution::Gaussian { noise_multiplier },
            update: UpdateRule::Sgd,
            averaging: Averaging::Last,
            public_size: None,
        }
    }

    /// Sets the public number of examples, the field `public_size`: Poisson sampling divides
    /// the noisy sums by `q·size`.
    pub fn public_size(mut self, size: usize) -> Self {
        self.public_size = Some(size);
        self
    }

    /// Sets the noise law.
    pub fn noise(mut self, noise: NoiseDistribution) -> Self {
        self.noise = noise;
        self
    }

    /// Sets the update rule.
    pub fn update(mut self, update: UpdateRule) -> Self {
        self.update = update;
        self
    }

    /// Sets the averaging mode.
    pub fn averaging(mut self, averaging: Averaging) -> Self {
        self.averaging = averaging;
        self
    }

    /// Checks the hyper-parameters against a dataset of `n` examples in dimension `d` and
    /// returns the plan: number of steps, the mechanism of one step, the relation and the
    /// expected batch size.
    fn plan(&self, n: usize, d: usize) -> Result<Plan> {
        self.step.check()?;
        let clip = positive("clip", self.clip)?;
        self.update.check()?;
        self.averaging.check()?;
        if n == 0 {
            return Err(Error::EmptyData);
        }
        // The size Poisson's expected batch is computed for.
        let sized = self.public_size.unwrap_or(n);
        count("public_size", sized)?;
        const GAMMA_POISSON_ONLY: &str = "Gamma-ball noise is analysed with Poisson sampling only";
        // The Gaussian noise multiplier, for the schedules that support only Gaussian noise.
        let gaussian_sigma = match self.noise {
            NoiseDistribution::Gaussian { noise_multiplier } => Ok(noise_multiplier),
            NoiseDistribution::GammaBall { .. } => Err(Error::Unsupported(GAMMA_POISSON_ONLY)),
        };
        let noise = match self.noise {
            NoiseDistribution::Gaussian { noise_multiplier } => {
                StepNoise::Exact(sum_multiplier(noise_multiplier, clip, d)?.0)
            }
            NoiseDistribution::GammaBall { scale } => {
                positive("scale", scale)?;
                if !matches!(self.schedule, BatchSchedule::Poisson { .. }) {
                    return Err(Error::Unsupported(GAMMA_POISSON_ONLY));
                }
                StepNoise::Float(Noise::GammaBall { scale })
            }
        };
        let batch_ok = |batch: usize| -> Result<usize> {
            count("batch", batch)?;
            if batch > n {
                return Err(Error::BatchTooLarge { batch, n });
            }
            Ok(batch)
        };
        let (steps, expected, relation, mechanism) = match self.schedule {
            BatchSchedule::Poisson { q } => {
                let q = unit_rate("q", q)?;
                let steps = match self.length {
                    Length::Steps(t) => count("steps", t)?,
                    Length::Epochs(e) => {
                        let t = count("epochs", e)? as f64 / q;
                        count("steps", (t * (1.0 - 1e-9)).ceil() as usize)?
                    }
                };
                let mechanism = match self.noise {
                    NoiseDistribution::Gaussian { noise_multiplier } => {
                        let (release, z) = sum_multiplier(noise_multiplier, clip, d)?;
                        Mechanism::subsampled_gaussian(z, q)?
                            .with_grid(release.discrete_gaussian()?)
                    }
                    NoiseDistribution::GammaBall { scale } => {
                        Mechanism::gamma_ball(scale, q, d as u64, clip)?
                    }
                };
                (steps, q * sized as f64, Neighbouring::AddRemove, mechanism)
            }
            BatchSchedule::ShuffleOnce { batch } => {
                let b = batch_ok(batch)?;
                let pass = n / b;
                let steps = match self.length {
                    Length::Epochs(e) => {
                        if count("epochs", e)? != 1 {
                            return Err(Error::Unsupported(
                                "ShuffleOnce makes a single pass: use Epochs(1) or at most n/b steps",
                            ));
                        }
                        pass
                    }
                    Length::Steps(t) => {
                        count("steps", t)?;
                        if t > pass {
                            return Err(Error::Unsupported(
                                "ShuffleOnce makes a single pass: at most n/b steps",
                            ));
                        }
                        t
                    }
                };
                let (release, z) = sum_multiplier(gaussian_sigma?, clip, d)?;
                let mechanism =
                    Mechanism::gaussian(z * clip, clip)?.with_grid(release.discrete_gaussian()?);
                (steps, b as f64, Neighbouring::ReplaceOne, mechanism)
            }
            BatchSchedule::FixedSizeWithoutReplacement { batch } => {
                let b = batch_ok(batch)?;
                let steps = match self.length {
                    Length::Steps(t) => count("steps", t)?,
                    Length::Epochs(e) => count("epochs", e)?.saturating_mul(n).div_ceil(b),
                };
                let (release, z) = sum_multiplier(gaussian_sigma?, clip, d)?;
                let mechanism =
                    Mechanism::subsampled_gaussian_without_replacement(z, b as u64, n as u64)?
                        .with_grid(release.discrete_gaussian()?);
                (steps, b as f64, Neighbouring::ReplaceOne, mechanism)
            }
        };
        Ok(Plan {
            steps,
            expected,
            relation,
            mechanism,
            noise,
            clip,
        })
    }

    /// The number of steps this configuration runs on `n` examples.
    ///
    /// # Errors
    /// As [`DpSgd::minimize`] (for a dimension-1 problem).
    pub fn steps(&self, n: usize) -> Result<usize> {
        self.plan(n, 1).map(|p| p.steps)
    }

    /// Runs DP-SGD from `x0` (projected first) and returns the point with its ledger.
    ///
    /// # Errors
    /// A bad hyper-parameter ([`Error::InvalidParameter`]), a batch larger than the data
    /// ([`Error::BatchTooLarge`]), no examples ([`Error::EmptyData`]), `x0` of the wrong
    /// length ([`Error::DimensionMismatch`]), an unsupported combination
    /// ([`Error::Unsupported`]), a malformed set or regulariser.
    pub fn minimize<S, G, P, R>(
        &self,
        oracle: &S,
        reg: &G,
        proj: &P,
        x0: ArrayView1<'_, f64>,
        rng: &mut R,
        mut observer: Option<&mut dyn Observer>,
    ) -> Result<Solution>
    where
        S: ClippedSum + ?Sized,
        G: Regulariser + ?Sized,
        P: Projection + ?Sized,
        R: Rng + ?Sized,
    {
        let n = oracle.n_examples();
        let d = oracle.dim();
        let plan = self.plan(n, d)?;
        reg.check()?;
        proj.check()?;
        same_dim("x0", d, x0.len())?;

        oracle.prepare_for_batches();
        let mut x = x0.to_owned();
        proj.project(x.view_mut());
        let mut g = Array1::zeros(d);
        let mut state = UpdateState::new(self.update, d);
        let mut avg = Averager::new(self.averaging, plan.steps, d);
        let mut batch: Vec<usize> = Vec::new();
        let mut exact: Option<ExactSum> = None;
        let permutation: Vec<usize> = match self.schedule {
            BatchSchedule::ShuffleOnce { .. } => {
                let mut p: Vec<usize> = (0..n).collect();
                p.shuffle(rng);
                p
            }
            _ => Vec::new(),
        };
        let mut status = Status::IterationLimit;
        let mut released = 0u64;
        let mut iterations = 0;
        for t in 0..plan.steps {
            let indices: &[usize] = match self.schedule {
                BatchSchedule::Poisson { q } => {
                    poisson_batch(rng, n, q, &mut batch);
                    &batch
                }
                BatchSchedule::ShuffleOnce { batch: b } => &permutation[t * b..(t + 1) * b],
                BatchSchedule::FixedSizeWithoutReplacement { batch: b } => {
                    batch = rand::seq::index::sample(rng, n, b).into_vec();
                    &batch
                }
            };
            match &plan.noise {
                StepNoise::Exact(release) => {
                    let sum = exact.get_or_insert_with(|| ExactSum::new(*release.quantiser()));
                    oracle.exact_clipped_sum(x.view(), Some(indices), sum);
                    release.release(NOISY_GRADIENT_LABEL, rng, sum, g.view_mut())?;
                }
                StepNoise::Float(noise) => {
                    oracle.clipped_sum(x.view(), Some(indices), plan.clip, g.view_mut());
                    noise.add_to(NOISY_GRADIENT_LABEL, rng, g.view_mut())?;
                }
            }
            released += 1;
            g /= plan.expected;
            reg.add_grad(x.view(), g.view_mut());
            let eta = self.step.at(t);
            state.apply(t, eta, &g, &mut x);
            proj.project(x.view_mut());
            iterations = t + 1;
            avg.push(t, x.view());
            if !report_step(observer.as_deref_mut(), t, &g, eta) {
                status = Status::StoppedByObserver;
                break;
            }
        }
        let mut ledger = Ledger::new(plan.relation);
        ledger.record(plan.mechanism, released, NOISY_GRADIENT_LABEL);
        Ok(Solution {
            x: avg.finish(x),
            status,
            iterations,
            ledger: Some(ledger),
        })
    }
}

/// A checked DP-SGD configuration for a given dataset size.
#[derive(Debug)]
struct Plan {
    steps: usize,
    expected: f64,
    relation: Neighbouring,
    mechanism: Mechanism,
    noise: StepNoise,
    clip: f64,
}

/// The noise of one DP-SGD step: the exact release of an exact sum, or the floating-point
/// Gamma ball on the `f64` sum (paper 000; no exact sampler is known for it).
#[derive(Debug)]
enum StepNoise {
    Exact(SumRelease),
    Float(Noise),
}

/// Optimiser state of an [`UpdateRule`].
#[derive(Debug)]
enum UpdateState {
    Sgd,
    Momentum {
        beta: f64,
        v: Array1<f64>,
    },
    Adam {
        beta1: f64,
        beta2: f64,
        eps: f64,
        m: Array1<f64>,
        v: Array1<f64>,
    },
}

impl UpdateState {
    fn new(rule: UpdateRule, d: usize) -> Self {
        match rule {
            UpdateRule::Sgd => UpdateState::Sgd,
            UpdateRule::Momentum { beta } => UpdateState::Momentum {
                beta,
                v: Array1::zeros(d),
            },
            UpdateRule::Adam { beta1, beta2, eps } => UpdateState::Adam {
                beta1,
                beta2,
                eps,
                m: Array1::zeros(d),
                v: Array1::zeros(d),
            },
        }
    }

    /// `x ← x − η · direction(g)` (projection is the caller's).
    fn apply(&mut self, t: usize, eta: f64, g: &Array1<f64>, x: &mut Array1<f64>) {
        match self {
            UpdateState::Sgd => x.scaled_add(-eta, g),
            UpdateState::Momentum { beta, v } => {
                *v *= *beta;
                *v += g;
                x.scaled_add(-eta, v);
            }
            UpdateState::Adam {
                beta1,
                beta2,
                eps,
                m,
                v,
            } => {
                let k = (t + 1) as i32;
                let c1 = 1.0 - beta1.powi(k);
                let c2 = 1.0 - beta2.powi(k);
                let (b1, b2, e) = (*beta1, *beta2, *eps);
                Zip::from(x).and(m).and(v).and(g).for_each(|x, m, v, &g| {
                    *m = b1 * *m + (1.0 - b1) * g;
                    *v = b2 * *v + (1.0 - b2) * g * g;
                    let mh = *m / c1;
                    let vh = *v / c2;
                    *x -= eta * mh / (vh.sqrt() + e);
                });
            }
        }
    }
}

/// Shows the observer (if any) step `t`'s released gradient and the step; `false` when it asks
/// to stop. The objective's value is not computed (it would read the data unprotected).
fn report_step(
    observer: Option<&mut (dyn Observer + '_)>,
    t: usize,
    g: &Array1<f64>,
    eta: f64,
) -> bool {
    let Some(obs) = observer else {
        return true;
    };
    obs.observe_gradient(t, g.view());
    obs.observe(&IterationInfo {
        iteration: t,
        value: f64::NAN,
        grad_norm: norm(g),
        step_size: eta,
    })
}

/// Writes into `out` a Poisson sample of `0..n`: every index independently with probability
/// `q`. Skips ahead by geometric gaps `⌊E/λ⌋`, `E` a standard exponential and
/// `λ = −ln(1−q)` (`P(gap ≥ m) = P(E ≥ mλ) = (1−q)^m`, the law of the number of indices left
/// out before one is taken), so the cost is `O(qn)` rather than `O(n)`. `E` comes from
/// `rand_distr`'s ziggurat [`Exp1`] (almost always a table look-up and a multiplication)
/// rather than as `−ln U` (on an Intel Xeon, 5.5 instead of 11.3 ns per taken index; on an
/// AMD EPYC, whose logarithm is cheaper, within the noise of an epoch).
fn poisson_batch<R: Rng + ?Sized>(rng: &mut R, n: usize, q: f64, out: &mut Vec<usize>) {
    out.clear();
    if q >= 1.0 {
        out.extend(0..n);
        return;
    }
    let scale = -1.0 / (-q).ln_1p(); // 1/λ, λ = −ln(1 − q) > 0
    let mut i = 0usize;
    loop {
        let e: f64 = Exp1.sample(rng);
        // The gap is `⌊g⌋`, `g ≥ 0`: `⌊g⌋ ≥ m ⟺ g ≥ m` for an integer `m`, and the cast
        // truncates (no call to `floor`). Compare in floating point first: `g` may exceed
        // usize for tiny q. A subnormal q makes `scale` infinite and `0·∞` NaN: only a gap
        // known to land inside `0..n` takes an index, so NaN ends the batch.
        let g = e * scale;
        if g.is_nan() || g >= (n - i) as f64 {
            break;
        }
        i += g as usize;
        out.push(i);
        i += 1;
        if i >= n {
            break;
        }
    }
}

#[cfg(test)]
mod tests;
