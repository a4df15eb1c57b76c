//! Paper 001, Table 2 and Fig. 2: test accuracy of approximate minima perturbation (Alg. 1)
//! against DP-SGD tuned without accounting ("dishonest") and DP-SGD tuned honestly
//! (Papernot & Steinke), on Adult, Synthetic-L and Synthetic-H.

use dp_accounting::AccountantKind;
use dp_glm::preprocess::Pipeline;
use dp_glm::selection::{HonestTuning, TuningWithoutPrivacyAccounting};
use dp_glm::{Amp, Dataset, DpSgd, LinearModel, Loss};
use dp_optim::{UpdateRule, seeded_rng};

use super::synthetic::{glm, mean_over};
use crate::data::{LoadedData, PaperDataset};
use crate::error::Result;
use crate::experiment::{Artifact, Experiment, RunContext};
use crate::figure::{Figure, Series};
use crate::table::{Cell, Table};

const DELTA: f64 = 1e-5;
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
    let z = test.x().dot(&model.coef());
    let right = z
        .iter()
        .zip(test.y())
        .filter(|&(z, y)| (if *z >= 0.0 { 1.0 } else { -1.0 }) == *y)
        .count();
    100.0 * right as f64 / test.n_samples() as f64
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

/// The four methods' mean accuracies at each ε on one dataset.
fn dataset_rows(
    ctx: &mut RunContext,
    dataset: PaperDataset,
    s: &Settings,
) -> Result<Vec<[f64; 4]>> {
    let split = dataset.load(ctx.require_data()?, crate::data::ADULT_SPLIT_SEED)?;
    let (train, test) = (prepare(&split.train)?, prepare(&split.test)?);
    let sgd = |eps: f64| {
        let mut l = DpSgd::new(Loss::Logistic).budget(eps, DELTA);
        l.batch_size = 256.min(train.n_samples() / 4);
        l.epochs = s.epochs;
        l.clip = 2f64.sqrt();
        l.update = UpdateRule::adam();
        l.budget.accountant = AccountantKind::Rdp;
        l
    };
    let amp = |eps: f64, kind: AccountantKind| {
        let mut a = Amp::new(Loss::Logistic).budget(eps, DELTA);
        a.objpert.x_bound = 2f64.sqrt();
        a.objpert.budget.accountant = kind;
        a
    };
    let grid = rates(s.grid);
    let mut rows = Vec::new();
    for eps in EPSILONS {
        let seed0 = 10_000 * (1 + rows.len() as u64);
        let mut row = [0.0; 4];
        row[0] = mean_over(s.trials, |t| {
            Ok(accuracy(
                &glm(amp(eps, AccountantKind::Rdp).fit(&train, &mut seeded_rng(seed0 + t)))?,
                &test,
            ))
        })?;
        row[1] = mean_over(s.trials, |t| {
            Ok(accuracy(
                &glm(amp(eps, AccountantKind::Pld).fit(&train, &mut seeded_rng(seed0 + 100 + t)))?,
                &test,
            ))
        })?;
        row[2] = mean_over(s.trials, |t| {
            let tuning = TuningWithoutPrivacyAccounting::new(sgd(eps), grid.clone());
            Ok(accuracy(
                &glm(tuning.fit(&train, &mut seeded_rng(seed0 + 200 + t)))?,
                &test,
            ))
        })?;
        row[3] = mean_over(s.trials, |t| {
            let tuning = HonestTuning::new(sgd(eps), grid.clone(), poisson_mean(s.grid));
            Ok(accuracy(
                &glm(tuning.fit(&train, &mut seeded_rng(seed0 + 300 + t)))?,
                &test,
            ))
        })?;
        rows.push(row);
        ctx.progress().step(&format!("{dataset}: ε = {eps}"));
    }
    Ok(rows)
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
         Papernot–Steinke, beside the paper's numbers."
    }

    fn needs_data(&self) -> bool {
        true
    }

    fn run(&self, ctx: &mut RunContext) -> Result<Vec<Artifact>> {
        let quick = ctx.mode().is_quick();
        let s = if quick {
            Settings {
                trials: 2,
                epochs: 10,
                grid: 4,
            }
        } else {
            Settings {
                trials: 5,
                epochs: 60,
                grid: 8,
            }
        };
        let datasets: &[PaperDataset] = if quick {
            &[PaperDataset::Adult, PaperDataset::SyntheticL]
        } else {
            &[
                PaperDataset::Adult,
                PaperDataset::SyntheticL,
                PaperDataset::SyntheticH,
            ]
        };
        ctx.progress()
            .set_steps((datasets.len() * EPSILONS.len()) as u64);
        let mut table = Table::new(
            "table2",
            "Test accuracy (%), mean over trials",
            [
                "dataset",
                "epsilon",
                "AMP (RDP)",
                "AMP (PLD)",
                "DP-SGD not accounted",
                "DP-SGD honest",
                "paper AMP",
                "paper not accounted",
                "paper honest",
            ],
        );
        let mut artifacts = Vec::new();
        for &dataset in datasets {
            let rows = dataset_rows(ctx, dataset, &s)?;
            let paper = paper_numbers(dataset);
            let mut fig = Figure::new(
                format!("accuracy-vs-epsilon-{dataset}"),
                format!("{dataset}: test accuracy"),
                "ε",
                "test accuracy (%)",
            )
            .log_x();
            let names = [
                "AMP (RDP)",
                "AMP (PLD)",
                "DP-SGD not accounted",
                "DP-SGD honest",
            ];
            for (m, name) in names.iter().enumerate() {
                let pts = EPSILONS
                    .iter()
                    .zip(&rows)
                    .map(|(&e, r)| (e, r[m]))
                    .collect();
                fig = fig.with_series(Series::line_with_points(*name, pts));
            }
            for (i, (&eps, row)) in EPSILONS.iter().zip(&rows).enumerate() {
                let mut cells = vec![Cell::Text(dataset.to_string()), Cell::Number(eps)];
                cells.extend(row.iter().map(|&v| Cell::Number(v)));
                for m in 0..3 {
                    cells.push(match paper {
                        Some(p) => Cell::Number(p[m][i]),
                        None => Cell::Text("—".into()),
                    });
                }
                table.push_row(cells);
            }
            artifacts.push(Artifact::figure(fig));
        }
        let note = format!(
            "{} trials; DP-SGD: Adam, expected batch 256, {} epochs, clip √2, learning rates \
             log-spaced on [1e-3, 1] ({} points; the paper's range was lost in extraction), \
             20% of the training rows held out for validation; honest: K ~ Poisson(μ = {:.2}) \
             with P(K ≥ {}) ≥ 0.9 and noisy validation counts (σ = 10), accounted by \
             Papernot–Steinke on RDP as the paper. AMP: τ = 5e-4, σ_out = 0.15, L = √2, β = 1/2, \
             (σ, λ) by the paper's rule. Our Adult split is Iyengar's 80/20 on a Xoshiro \
             permutation (NumPy's MT19937 shuffle cannot be reproduced), so differences of a \
             few tenths of a point are within the split's effect. Gisette is not staged.",
            s.trials,
            s.epochs,
            s.grid,
            poisson_mean(s.grid),
            s.grid
        );
        artifacts.insert(0, Artifact::table(table).with_note(note));
        Ok(artifacts)
    }
}

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
        let mut amp = Amp::new(Loss::Logistic).budget(1.0, DELTA);
        amp.objpert.x_bound = 2f64.sqrt();
        let a = glm(amp.fit(&train, &mut seeded_rng(1)))?;
        let mut sgd = DpSgd::new(Loss::Logistic).budget(1.0, DELTA);
        sgd.batch_size = 100;
        sgd.epochs = 2;
        sgd.update = UpdateRule::adam();
        sgd.budget.accountant = AccountantKind::Rdp;
        let dishonest = glm(TuningWithoutPrivacyAccounting::new(sgd.clone(), rates(3))
            .fit(&train, &mut seeded_rng(2)))?;
        let honest =
            glm(HonestTuning::new(sgd, rates(3), poisson_mean(3)).fit(&train, &mut seeded_rng(3)))?;
        for m in [&a, &dishonest, &honest] {
            let acc = accuracy(m, &test);
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
