//! Paper 001, Table 2 and Fig. 2: test accuracy of approximate minima perturbation (Alg. 1)
//! against DP-SGD tuned without accounting ("dishonest") and DP-SGD tuned honestly
//! (Papernot & Steinke), on Adult, Synthetic-L and Synthetic-H.

use std::path::Path;

use dp_accounting::AccountantKind;
use dp_glm::preprocess::Pipeline;
use dp_glm::selection::{HonestTuning, TuningWithoutPrivacyAccounting};
use dp_glm::{Amp, Dataset, DpSgd, GlmObjective, LinearModel, Loss, Scale};
use dp_optim::{Lbfgs, UpdateRule, seeded_rng};
use rayon::prelude::*;

use super::synthetic::glm;
use crate::data::{ADULT_SPLIT_SEED, LoadedData, PaperDataset, Split, adult_rows, adult_split};
use crate::error::Result;
use crate::experiment::{Artifact, Experiment, RunContext};
use crate::figure::{Figure, Series};
use crate::table::{Cell, Table};

const DELTA: f64 = 1e-5;
/// Other random Adult splits over which the non-private accuracy's range is measured.
const SPLITS: u64 = 5;
const EPSILONS: [f64; 3] = [0.1, 1.0, 8.0];

/// The paper's reported accuracies (%) at ε = 0.1, 1, 8: (Alg. 1, dishonest, honest).
/// Adult is the table the task statement quotes; the second table of the paper text is
/// labelled here by its accuracy level (≈ 95 %), which matches Synthetic-L.
fn paper_numbers(dataset: PaperDataset) -> Option<[[f64; 3]; 3]> {
    match dataset {
        PaperDataset::Adult => Some([
            [81.37, 83.18, 83.99],
            [81.61, 83.54, 84.19],
            [78.32, 82.40, 83.66],
        ]),
        PaperDataset::SyntheticL => Some([
            [90.05, 94.50, 95.30],
            [93.85, 95.25, 95.43],
            [77.34, 93.15, 95.17],
        ]),
        _ => None,
    }
}

/// Test accuracy of a model in percent.
fn accuracy(model: &LinearModel, test: &Dataset) -> f64 {
    accuracy_of(model.coef(), test)
}

/// Test accuracy of the linear classifier `sign(⟨w, x⟩)` in percent.
fn accuracy_of(w: ndarray::ArrayView1<'_, f64>, test: &Dataset) -> f64 {
    let z = test.x().dot(&w);
    let right = z
        .iter()
        .zip(test.y())
        .filter(|&(z, y)| (if *z >= 0.0 { 1.0 } else { -1.0 }) == *y)
        .count();
    100.0 * right as f64 / test.n_samples() as f64
}

/// A cell's mean test accuracy over the trials and its standard error.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Estimate {
    mean: f64,
    se: f64,
}

/// The mean and standard error (sample standard deviation / √trials) of the trials' values,
/// summed in trial order.
fn estimate(values: &[f64]) -> Estimate {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    Estimate {
        mean,
        se: (var / n).sqrt(),
    }
}

/// Test accuracy (%) of non-private logistic regression with scikit-learn's default ridge
/// (`C = 1`: `λ = 1/n` on the mean loss), the ceiling the private methods approach.
fn non_private_accuracy(train: &Dataset, test: &Dataset) -> Result<f64> {
    let lambda = 1.0 / train.n_samples() as f64;
    let obj = glm(GlmObjective::new(
        train,
        Loss::Logistic,
        lambda,
        Scale::Mean,
    ))?;
    let x0 = ndarray::Array1::zeros(train.n_features());
    let sol = Lbfgs::new()
        .max_iters(5000)
        .grad_tol(1e-9)
        .minimize(&obj, x0.view(), None)
        .map_err(|e| crate::Error::Experiment(format!("non-private fit: {e}")))?;
    Ok(accuracy_of(sol.x.view(), test))
}

/// Alg. 1 with the paper's settings (`L = √2`, `β = 1/2`) and accountant `kind`.
fn amp(eps: f64, kind: AccountantKind) -> Amp {
    let mut a = Amp::new(Loss::Logistic).budget(eps, DELTA);
    a.objpert.x_bound = 2f64.sqrt();
    a.objpert.budget.accountant = kind;
    a
}

/// What the paper's `(σ, λ)` rule picks at the smallest ε under RDP and under PLD.
fn rule_note() -> Result<String> {
    let eps = EPSILONS[0];
    let (s_rdp, l_rdp) = glm(amp(eps, AccountantKind::Rdp).calibrate())?;
    let (s_pld, l_pld) = glm(amp(eps, AccountantKind::Pld).calibrate())?;
    Ok(format!(
        " AMP (PLD) is not always above AMP (RDP): the paper's rule spends a tighter \
         accountant on a smaller λ, not a smaller σ (ε = {eps}: RDP σ = {s_rdp:.2}, \
         λ = {l_rdp:.2}; PLD σ = {s_pld:.2}, λ = {l_pld:.2}), and σ/λ sets the scale of the \
         minimiser's perturbation."
    ))
}

/// Unit-norm rows plus a bias feature 1 (paper 001's preprocessing; per row, no fitting).
fn prepare(part: &LoadedData) -> Result<Dataset> {
    let x = glm(Pipeline::paper_001().fit(part.x.view()))?;
    glm(Dataset::new(
        glm(x.transform(part.x.view()))?,
        part.y.clone(),
    ))
}

/// The learning-rate grid: `size` points evenly spaced in log scale on `[1e-3, 1]`.
fn rates(size: usize) -> Vec<f64> {
    (0..size)
        .map(|i| 10f64.powf(-3.0 + 3.0 * i as f64 / (size.max(2) - 1) as f64))
        .collect()
}

/// The smallest Poisson mean with `P(K ≥ size) ≥ 0.9` (paper 001 §5).
fn poisson_mean(size: usize) -> f64 {
    let tail = |mu: f64| {
        // P(K < size) = Σ_{k<size} e^{−μ} μ^k / k!
        let mut term = (-mu).exp();
        let mut below = 0.0;
        for k in 0..size {
            below += term;
            term *= mu / (k + 1) as f64;
        }
        1.0 - below
    };
    let mut mu = size as f64;
    while tail(mu) < 0.9 {
        mu += 0.05;
    }
    mu
}

/// Settings of one run of the experiment.
struct Settings {
    trials: u64,
    epochs: usize,
    grid: usize,
}

/// One dataset's results: the four methods' estimates at each ε, and the non-private
/// accuracy on the same split.
struct DatasetResults {
    rows: Vec<[Estimate; 4]>,
    non_private: f64,
    /// Adult only: the non-private accuracy's range over other random 80/20 splits.
    split_range: Option<(f64, f64)>,
}

/// The methods of a row, in column order.
const METHODS: [&str; 4] = [
    "AMP (RDP)",
    "AMP (PLD)",
    "DP-SGD not accounted",
    "DP-SGD honest",
];

/// The method of ours each paper column is compared with: (our column, paper column, name).
const COMPARED: [(usize, usize, &str); 3] = [
    (0, 0, "AMP (Alg. 1, RDP)"),
    (2, 1, "DP-SGD not accounted"),
    (3, 2, "DP-SGD honest"),
];

/// One dataset ready for the trials.
struct Prepared {
    train: Dataset,
    test: Dataset,
    non_private: f64,
    /// Adult only: the non-private accuracy's range over other random 80/20 splits.
    split_range: Option<(f64, f64)>,
}

/// Loads and prepares `dataset`, with its non-private accuracy (and, for Adult, the range of
/// that accuracy over [`SPLITS`] other random splits: the files read once, the splits fitted
/// in parallel).
fn prepare_dataset(data_dir: &Path, dataset: PaperDataset) -> Result<Prepared> {
    let prepared = |split: Split| -> Result<(Dataset, Dataset, f64)> {
        let (train, test) = (prepare(&split.train)?, prepare(&split.test)?);
        let non_private = non_private_accuracy(&train, &test)?;
        Ok((train, test, non_private))
    };
    if dataset != PaperDataset::Adult {
        let (train, test, non_private) = prepared(dataset.load(data_dir, ADULT_SPLIT_SEED)?)?;
        return Ok(Prepared {
            train,
            test,
            non_private,
            split_range: None,
        });
    }
    let rows = adult_rows(data_dir)?;
    let mut splits = (0..=SPLITS)
        .into_par_iter()
        .map(|k| prepared(adult_split(rows.clone(), ADULT_SPLIT_SEED + k)))
        .collect::<Result<Vec<_>>>()?
        .into_iter();
    let (train, test, non_private) = splits
        .next()
        .ok_or_else(|| crate::Error::Experiment("no Adult split".into()))?;
    let split_range = splits.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (_, _, a)| {
        (lo.min(a), hi.max(a))
    });
    Ok(Prepared {
        train,
        test,
        non_private,
        split_range: Some(split_range),
    })
}

/// Test accuracy (%) of method `method` (an index into [`METHODS`]) at `ε = EPSILONS[e]` in
/// trial `t`, seeded from `(e, method, t)` alone: one independent task.
fn trial(p: &Prepared, s: &Settings, e: usize, method: usize, t: u64) -> Result<f64> {
    let eps = EPSILONS[e];
    let seed0 = 10_000 * (1 + e as u64);
    let sgd = || {
        let mut l = DpSgd::new(Loss::Logistic).budget(eps, DELTA);
        l.batch_size = 256.min(p.train.n_samples() / 4);
        l.epochs = s.epochs;
        l.clip = 2f64.sqrt();
        l.update = UpdateRule::adam();
        l.budget.accountant = AccountantKind::Rdp;
        l
    };
    let model = match method {
        0 => amp(eps, AccountantKind::Rdp).fit(&p.train, &mut seeded_rng(seed0 + t)),
        1 => amp(eps, AccountantKind::Pld).fit(&p.train, &mut seeded_rng(seed0 + 100 + t)),
        2 => TuningWithoutPrivacyAccounting::new(sgd(), rates(s.grid))
            .fit(&p.train, &mut seeded_rng(seed0 + 200 + t)),
        _ => HonestTuning::new(sgd(), rates(s.grid), poisson_mean(s.grid))
            .fit(&p.train, &mut seeded_rng(seed0 + 300 + t)),
    };
    Ok(accuracy(&glm(model)?, &p.test))
}

/// The four methods' accuracies at each ε on every dataset. Every (dataset, ε, method, trial)
/// is an independent task on the rayon pool; the trials are then reduced in trial order, so
/// the numbers are those of a serial run.
fn all_results(
    ctx: &mut RunContext,
    datasets: &[PaperDataset],
    s: &Settings,
) -> Result<Vec<DatasetResults>> {
    let data_dir = ctx.require_data()?.to_owned();
    let prepared = datasets
        .par_iter()
        .map(|&d| prepare_dataset(&data_dir, d))
        .collect::<Result<Vec<_>>>()?;
    ctx.progress().step("datasets prepared");
    let trials = s.trials as usize;
    let per_eps = METHODS.len() * trials;
    let per_dataset = EPSILONS.len() * per_eps;
    let values = (0..prepared.len() * per_dataset)
        .into_par_iter()
        .map(|k| {
            let (d, e, m, t) = (
                k / per_dataset,
                k % per_dataset / per_eps,
                k % per_eps / trials,
                k % trials,
            );
            trial(&prepared[d], s, e, m, t as u64)
        })
        .collect::<Result<Vec<_>>>()?;
    ctx.progress().step("trials");
    Ok(prepared
        .into_iter()
        .zip(values.chunks(per_dataset))
        .map(|(p, by_eps)| DatasetResults {
            rows: by_eps
                .chunks(per_eps)
                .map(|by_method| {
                    let mut row = [Estimate { mean: 0.0, se: 0.0 }; 4];
                    for (cell, values) in row.iter_mut().zip(by_method.chunks(trials)) {
                        *cell = estimate(values);
                    }
                    row
                })
                .collect(),
            non_private: p.non_private,
            split_range: p.split_range,
        })
        .collect())
}

/// Why a cell beyond the noise band differs from the paper, from what the run measured.
fn reason(
    dataset: PaperDataset,
    sgd: bool,
    paper: f64,
    ours: f64,
    results: &DatasetResults,
) -> String {
    let non_private = results.non_private;
    if paper > non_private {
        return format!(
            "the paper's {paper:.2} % is above non-private logistic regression on our copy of \
             the data ({non_private:.2} %), so no private method can reach it here: the data or \
             split differ"
        );
    }
    let side = if ours > paper {
        "ours is higher"
    } else {
        "ours is lower"
    };
    let data = match (dataset, results.split_range) {
        (PaperDataset::Adult, Some((lo, hi))) => format!(
            "our 80/20 split is a different random permutation than Iyengar et al.'s (NumPy's \
             MT19937 shuffle is not reproduced), and the split alone moves non-private accuracy \
             over {lo:.2}–{hi:.2} % across {SPLITS} other random splits"
        ),
        (PaperDataset::Adult, None) => "our 80/20 split differs from Iyengar et al.'s".to_string(),
        _ => "the staged data was regenerated from the recipe, not proven identical to the \
              authors'"
            .to_string(),
    };

    let tuning = if sgd {
        "; the paper's learning-rate range was lost in extraction"
    } else {
        ""
    };
    format!("{side}: {data}{tuning}")
}

/// Table 2 and Fig. 2 of paper 001.
pub(crate) struct Table2Accuracy;

impl Experiment for Table2Accuracy {
    fn id(&self) -> &'static str {
        "001-table2-amp-vs-dpsgd"
    }

    fn title(&self) -> &'static str {
        "AMP against dishonestly and honestly tuned DP-SGD"
    }

    fn paper(&self) -> &'static str {
        "001 Table 2, Fig. 2"
    }

    fn description(&self) -> &'static str {
        "Mean test accuracy at ε = 0.1, 1, 8 (δ = 1e-5) of Alg. 1 (AMP; RDP as the paper, and \
         our PLD accounting), DP-SGD tuned without accounting, and DP-SGD tuned with \
         Papernot–Steinke, beside non-private logistic regression and the paper's numbers; \
         every compared cell with its noise band, and why those beyond it differ."
    }

    fn reading(&self) -> &'static str {
        "Read each row of the first table across: the paper's claim is that AMP is competitive \
         with DP-SGD tuned without accounting and beats DP-SGD once its tuning is paid for \
         (honest), most at small ε; the second table marks each cell that differs from the \
         paper by more than our noise band, and the note below it says why."
    }

    fn needs_data(&self) -> bool {
        true
    }

    fn run(&self, ctx: &mut RunContext) -> Result<Vec<Artifact>> {
        let quick = ctx.mode().is_quick();
        let s = Settings {
            trials: 5,
            epochs: if quick { 10 } else { 60 },
            grid: if quick { 4 } else { 8 },
        };
        let datasets = [
            PaperDataset::Adult,
            PaperDataset::SyntheticL,
            PaperDataset::SyntheticH,
        ];
        ctx.progress().set_steps(2);
        let mut table = Table::new(
            "table2",
            "Test accuracy (%), mean over trials",
            [
                "dataset",
                "ε",
                METHODS[0],
                METHODS[1],
                METHODS[2],
                METHODS[3],
                "non-private",
                "paper AMP",
                "paper not accounted",
                "paper honest",
            ],
        );
        let mut versus = Table::new(
            "table2-vs-paper",
            "Ours against the paper, per cell: mean ± standard error over our trials",
            [
                "dataset",
                "ε",
                "method",
                "ours",
                "standard error",
                "paper",
                "difference",
                "noise band",
                "beyond noise",
            ],
        );
        let mut beyond = Vec::new();
        let mut artifacts = Vec::new();
        for (dataset, results) in datasets.into_iter().zip(all_results(ctx, &datasets, &s)?) {
            let paper = paper_numbers(dataset);
            let mut fig = Figure::new(
                format!("accuracy-vs-epsilon-{dataset}"),
                format!("{dataset}: test accuracy"),
                "ε",
                "test accuracy (%)",
            )
            .log_x();
            for (m, name) in METHODS.iter().enumerate() {
                let pts = EPSILONS
                    .iter()
                    .zip(&results.rows)
                    .map(|(&e, r)| (e, r[m].mean))
                    .collect();
                fig = fig.with_series(Series::line_with_points(*name, pts));
            }
            for (i, (&eps, row)) in EPSILONS.iter().zip(&results.rows).enumerate() {
                let mut cells = vec![Cell::Text(dataset.to_string()), Cell::Param(eps)];
                cells.extend(row.iter().map(|e| Cell::Number(e.mean)));
                cells.push(Cell::Number(results.non_private));
                for m in 0..3 {
                    cells.push(match paper {
                        Some(p) => Cell::Number(p[m][i]),
                        None => Cell::Text("—".into()),
                    });
                }
                table.push_row(cells);
                let Some(p) = paper else { continue };
                for (ours, theirs, name) in COMPARED {
                    let (e, paper_value) = (row[ours], p[theirs][i]);
                    let diff = e.mean - paper_value;
                    // Two independent means with (we assume) the same spread: the difference
                    // has standard error √2·se; two of those is the 95% band.
                    let band = 2.0 * std::f64::consts::SQRT_2 * e.se;
                    let out = diff.abs() > band;
                    versus.push_row(vec![
                        Cell::Text(dataset.to_string()),
                        Cell::Param(eps),
                        Cell::Text(name.into()),
                        Cell::Number(e.mean),
                        Cell::Number(e.se),
                        Cell::Number(paper_value),
                        Cell::Number(diff),
                        Cell::Number(band),
                        Cell::Text(if out { "yes" } else { "no" }.into()),
                    ]);
                    if out {
                        beyond.push(format!(
                            "{dataset} ε = {eps}, {name}: {:.2} vs {paper_value:.2} ({diff:+.2}, \
                             band ±{band:.2}) — {}",
                            e.mean,
                            reason(dataset, ours >= 2, paper_value, e.mean, &results)
                        ));
                    }
                }
            }
            artifacts.push(Artifact::figure(fig));
        }
        let note = format!(
            "{} trials; DP-SGD: Adam, expected batch 256, {} epochs, clip √2, learning rates \
             log-spaced on [1e-3, 1] ({} points; the paper's range was lost in extraction), \
             20% of the training rows held out for validation; honest: K ~ Poisson(μ = {:.2}) \
             with P(K ≥ {}) ≥ 0.9 and noisy validation counts (σ = 10), accounted by \
             Papernot–Steinke on RDP as the paper. AMP: τ = 5e-4, σ_out = 0.15, L = √2, β = 1/2, \
             (σ, λ) by the paper's rule.{}{} Non-private: logistic regression with scikit-learn's \
             default ridge on the same split. Our Adult split is Iyengar's 80/20 on a Xoshiro \
             permutation (NumPy's MT19937 shuffle cannot be reproduced). The paper gives no \
             spread, so a cell is beyond noise when |ours − paper| > 2·√2·(our standard error) \
             (the paper's mean assumed as noisy as ours). Synthetic-H has no paper numbers in \
             our copy of the paper; Gisette is not staged.",
            s.trials,
            s.epochs,
            s.grid,
            poisson_mean(s.grid),
            s.grid,
            rule_note()?,
            if quick {
                " Quick mode runs DP-SGD for 10 epochs on 4 learning rates (the paper: 60 \
                 epochs), which costs it most at small ε; `--full` runs 60 epochs on 8."
            } else {
                ""
            },
        );
        let mut versus_note = if beyond.is_empty() {
            "Every compared cell is within the noise band.".to_string()
        } else {
            format!(
                "Cells beyond the noise band, and why:\n- {}",
                beyond.join("\n- ")
            )
        };
        versus_note.push_str(SYNTHETIC_L_PROBE);
        artifacts.insert(0, Artifact::table(versus).with_note(versus_note));
        artifacts.insert(0, Artifact::table(table).with_note(note));
        Ok(artifacts)
    }
}

/// What `cargo run --release -p dp-bench --example table2_probe` measured on Synthetic-L at
/// ε = 0.1 (5 seeds, 60 epochs, 8 learning rates on [1e-3, 1]).
const SYNTHETIC_L_PROBE: &str = "\n\nSynthetic-L, DP-SGD at ε = 0.1 (paper 93.85 % not accounted): \
     the `table2_probe` example (5 seeds, 60 epochs) gets 89.38 % with our validation \
     selection at batch 256 and 89.78 % at the authors' code's batch 4096; even choosing the \
     learning rate by test accuracy on every run gives 90.29 % / 90.19 %, and the best single \
     learning rate averages 90.18 %. Nothing in our setup reaches 93.85 %, which is 1 point \
     below the non-private accuracy; the paper's AMP at the same ε (90.05 %) agrees with ours.";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::synthetic::logistic_ball;

    #[test]
    fn poisson_mean_meets_the_papers_rule_and_is_the_smallest() {
        for size in [4, 8] {
            let mu = poisson_mean(size);
            let below = |mu: f64| -> f64 {
                let mut term = (-mu).exp();
                let mut s = 0.0;
                for k in 0..size {
                    s += term;
                    term *= mu / (k + 1) as f64;
                }
                s
            };
            assert!(below(mu) <= 0.1 && below(mu - 0.05) > 0.1, "{size}: {mu}");
        }
        let r = rates(4);
        assert!((r[0] - 1e-3).abs() < 1e-15 && (r[3] - 1.0).abs() < 1e-12);
    }

    #[test]
    fn estimates_and_reasons() -> Result<()> {
        let e = estimate(&[1.0, 2.0, 3.0, 6.0]);
        // mean 3, sample variance (4 + 1 + 0 + 9)/3 = 14/3, se = √(14/3/4).
        assert!((e.mean - 3.0).abs() < 1e-15 && (e.se - (14.0f64 / 12.0).sqrt()).abs() < 1e-15);
        let results = |non_private, split_range| DatasetResults {
            rows: Vec::new(),
            non_private,
            split_range,
        };
        let above = reason(
            PaperDataset::SyntheticL,
            true,
            95.4,
            94.7,
            &results(94.85, None),
        );
        assert!(above.contains("above non-private"), "{above}");
        let adult = results(84.3, Some((84.0, 84.6)));
        let split = reason(PaperDataset::Adult, false, 83.2, 83.7, &adult);
        assert!(split.starts_with("ours is higher") && !split.contains("learning-rate"));
        assert!(split.contains("84.00–84.60 %"), "{split}");
        assert!(reason(PaperDataset::Adult, true, 81.6, 80.7, &adult).contains("learning-rate"));
        // The rule's note reports both accountants' choices at the smallest ε.
        let note = rule_note()?;
        assert!(
            note.contains("RDP σ =") && note.contains("PLD σ ="),
            "{note}"
        );
        Ok(())
    }

    #[test]
    fn the_three_methods_on_a_small_problem() -> Result<()> {
        // Rows in the unit ball plus a bias, as prepared for the paper's data.
        let (raw, _) = logistic_ball(3000, 5, 4.0, 1, 2)?;
        let (raw_test, _) = logistic_ball(3000, 5, 4.0, 1, 3)?;
        let part = |d: &Dataset| LoadedData {
            x: d.x().to_owned(),
            y: d.y().to_owned(),
            feature_names: None,
        };
        let (train, test) = (prepare(&part(&raw))?, prepare(&part(&raw_test))?);
        assert_eq!(train.n_features(), 6);
        let a = glm(amp(1.0, AccountantKind::Pld).fit(&train, &mut seeded_rng(1)))?;
        let mut sgd = DpSgd::new(Loss::Logistic).budget(1.0, DELTA);
        sgd.batch_size = 100;
        sgd.epochs = 2;
        sgd.update = UpdateRule::adam();
        sgd.budget.accountant = AccountantKind::Rdp;
        let dishonest = glm(TuningWithoutPrivacyAccounting::new(sgd.clone(), rates(3))
            .fit(&train, &mut seeded_rng(2)))?;
        let honest =
            glm(HonestTuning::new(sgd, rates(3), poisson_mean(3)).fit(&train, &mut seeded_rng(3)))?;
        // The non-private reference is the ceiling here.
        let ceiling = non_private_accuracy(&train, &test)?;
        for m in [&a, &dishonest, &honest] {
            let acc = accuracy(m, &test);
            assert!(acc <= ceiling + 1.0, "{acc} vs non-private {ceiling}");
            assert!((50.0..=100.0).contains(&acc), "{acc}");
            assert!(m.privacy().epsilon <= 1.0);
        }
        // Honest tuning pays for the selection with more noise per run.
        let sigma = |m: &LinearModel| m.privacy().noise[0].1;
        assert!(
            sigma(&honest) > sigma(&dishonest),
            "{} vs {}",
            sigma(&honest),
            sigma(&dishonest)
        );
        Ok(())
    }
}
