//! `dpglm account` and `dpglm calibrate`.

use std::io::Write;
use std::time::Instant;

use dp_accounting::{
    Accountant, AccountantKind, DEFAULT_CHAIN, Error, Neighbouring, NoteValue, PldConfig, Query,
    RdpAccountant, Repetitions, ShuffleMethod, Target, answer_with_fallback, calibrate_noise,
    shuffle_delta_numerical, shuffle_epsilon_numerical, tuned,
};
use dp_glm::{text_down, text_up};
use serde_json::json;

use crate::CliError;
use crate::cli::{AccountArgs, AccountantArg, CalibrateArgs, CalibrationAccountantArg};
use crate::mechanism_args::{MechanismName, map_error};

fn io(e: std::io::Error) -> CliError {
    CliError::Failure(format!("cannot write output: {e}"))
}

/// Builds an accountant of `kind` holding `steps` × `mech`; with no explicit choice, falls back
/// from PLD to RDP when PLD cannot analyse the mechanism.
fn accountant_for(
    explicit: Option<AccountantKind>,
    rel: Neighbouring,
    mech: &dp_accounting::Mechanism,
    steps: u64,
) -> Result<Box<dyn Accountant>, CliError> {
    let kinds: &[AccountantKind] = match &explicit {
        Some(k) => std::slice::from_ref(k),
        None => &[AccountantKind::Pld, AccountantKind::Rdp],
    };
    let mut last = None;
    for &k in kinds {
        let mut acc = k.build(rel);
        match acc.compose(mech, steps) {
            Ok(()) => return Ok(acc),
            Err(e @ Error::Unsupported { .. }) => last = Some(e),
            Err(e) => return Err(map_error(e)),
        }
    }
    Err(map_error(last.unwrap_or(Error::Unsupported {
        accountant: "pld",
        what: "this mechanism".into(),
    })))
}

/// The PLD settings from the flags (validated by the accountant itself).
fn pld_config(a: &AccountArgs) -> PldConfig {
    let default = PldConfig::default();
    PldConfig {
        epsilon_error: Some(a.epsilon_error),
        max_grid: a.max_grid.unwrap_or(default.max_grid),
        ..default
    }
}

/// A note's value as JSON.
fn note_json(v: &NoteValue) -> serde_json::Value {
    match v {
        NoteValue::Number(x) => json!(x),
        NoteValue::Numbers(xs) => json!(xs),
        NoteValue::Flag(b) => json!(b),
    }
}

/// `--steps 0` composes nothing: refused rather than reported as ε = 0.
fn check_steps(steps: u64) -> Result<(), CliError> {
    if steps == 0 {
        return Err(CliError::Usage(
            "invalid value for --steps: 0 (must be >= 1)".into(),
        ));
    }
    Ok(())
}

/// The number of compositions: `--steps` (default 1), or TF Privacy's
/// `ceil(epochs·n/batch size)` with `--epochs` (clap makes `--epochs` need `--batch-size`, which
/// needs `--n`, and conflict with `--steps`).
fn steps_of(a: &AccountArgs) -> Result<u64, CliError> {
    let m = &a.mechanism;
    m.sampling_rate()?; // checks 1 <= batch size <= n
    let steps = match (a.epochs, m.batch_size, m.n) {
        (Some(0), _, _) => {
            return Err(CliError::Usage(
                "invalid value for --epochs: 0 (must be >= 1)".into(),
            ));
        }
        (Some(e), Some(b), Some(n)) if b >= 1 => {
            e.checked_mul(n).map(|en| en.div_ceil(b)).ok_or_else(|| {
                CliError::Usage(format!(
                    "invalid value for --epochs: {e} (epochs x n overflows)"
                ))
            })?
        }
        (Some(_), _, _) => {
            return Err(CliError::Usage(
                "--epochs needs --batch-size and --n (steps = ceil(epochs x n / batch size))"
                    .into(),
            ));
        }
        (None, _, _) => a.steps.unwrap_or(1),
    };
    check_steps(steps)?;
    Ok(steps)
}

/// `dpglm account --mechanism shuffling`: one shuffled round of `n` (ε0, δ0)-DP local
/// randomisers, by the numerical bound of Feldman, McMillan & Talwar 2021 (closed form as
/// fallback), under replace-one.
fn shuffling(a: &AccountArgs, out: &mut dyn Write, start: Instant) -> Result<(), CliError> {
    let m = &a.mechanism;
    if let Some(steps) = a.steps.filter(|&s| s != 1) {
        return Err(CliError::Usage(format!(
            "invalid value for --steps: {steps} (--mechanism shuffling prices one shuffled round)"
        )));
    }
    if a.accountant.is_some() {
        return Err(CliError::Usage(
            "--accountant does not apply to --mechanism shuffling (it has its own bound)".into(),
        ));
    }
    if matches!(a.neighbouring, Some(crate::cli::NeighbouringArg::AddRemove)) {
        return Err(CliError::Usage(
            "--mechanism shuffling is analysed under replace-one only".into(),
        ));
    }
    let eps0 = m
        .eps0
        .ok_or_else(|| CliError::Usage("--eps0 is required for --mechanism shuffling".into()))?;
    let n =
        m.n.ok_or_else(|| CliError::Usage("--n is required for --mechanism shuffling".into()))?;
    let delta0 = m.delta0.unwrap_or(0.0);
    let (epsilon, delta, method) = match (a.delta, a.epsilon) {
        (Some(d), None) => {
            let b = shuffle_epsilon_numerical(eps0, delta0, n, d).map_err(map_error)?;
            (b.epsilon, b.delta, b.method.name())
        }
        (None, Some(e)) => {
            let d = shuffle_delta_numerical(eps0, delta0, n, e).map_err(map_error)?;
            (e, d, ShuffleMethod::Numerical.name())
        }
        _ => {
            return Err(CliError::Usage(
                "give exactly one of --delta and --epsilon".into(),
            ));
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    if a.json {
        let v = json!({
            "epsilon": epsilon,
            "delta": delta,
            "accountant": "shuffle",
            "method": method,
            "mechanism": "shuffling",
            "steps": 1,
            "neighbouring": Neighbouring::ReplaceOne.as_str(),
            "epsilon_lower": serde_json::Value::Null,
            "fallback": [],
            "notes": {},
            "seconds": seconds,
        });
        writeln!(out, "{v}").map_err(io)?;
    } else {
        writeln!(
            out,
            "{n} shuffled ({eps0}, {delta0:e})-DP local randomisers under replace-one ({method} bound):"
        )
        .map_err(io)?;
        writeln!(
            out,
            "  epsilon = {} at delta = {delta:e}",
            text_up(epsilon, 6)
        )
        .map_err(io)?;
    }
    Ok(())
}

/// The relation of `dpglm account`: `--neighbouring`, else the mechanism's own.
fn relation(a: &AccountArgs) -> Neighbouring {
    a.neighbouring
        .map(Neighbouring::from)
        .unwrap_or_else(|| a.mechanism.natural_relation())
}

/// The question asked: ε at `--delta` or δ at `--epsilon`.
fn query_of(a: &AccountArgs) -> Result<Query, CliError> {
    match (a.delta, a.epsilon) {
        (Some(delta), None) => Ok(Query::Epsilon { delta }),
        (None, Some(epsilon)) => Ok(Query::Delta { epsilon }),
        _ => Err(CliError::Usage(
            "give exactly one of --delta and --epsilon".into(),
        )),
    }
}

/// `dpglm account --tune-trials MEAN`: the privacy of honest tuning — the whole composition
/// (`steps` × the mechanism) run `K ~ Poisson(MEAN)` times, only the best run released.
///
/// # Privacy
/// Papernot & Steinke, *Hyperparameter tuning with Rényi differential privacy* (ICLR 2022),
/// Thm 6: the base's composed RDP curve `ε(α)` becomes
/// `ε(α) + μ·δ̂ + log(μ)/(α−1)` ([`dp_accounting::tuned`]), converted to (ε, δ) by the RDP
/// accountant's conversion. RDP only: the theorem is a statement about Rényi divergences.
fn tuning(
    a: &AccountArgs,
    steps: u64,
    mean: f64,
    out: &mut dyn Write,
    start: Instant,
) -> Result<(), CliError> {
    if !(mean.is_finite() && mean > 0.0) {
        return Err(CliError::Usage(format!(
            "invalid value for --tune-trials: {} (must be finite and > 0)",
            crate::mechanism_args::show(mean)
        )));
    }
    if let Some(k) = a.accountant.filter(|k| !matches!(k, AccountantArg::Rdp)) {
        return Err(CliError::Usage(format!(
            "--accountant {} does not apply with --tune-trials: honest tuning is analysed in \
             RDP (Papernot & Steinke 2022); use --accountant rdp or leave it out",
            AccountantKind::from(k)
        )));
    }
    if a.lower {
        return Err(CliError::Usage(
            "--lower does not apply with --tune-trials (the RDP accountant has no optimistic \
             estimate)"
                .into(),
        ));
    }
    let mech = a.mechanism.build(None)?;
    let rel = relation(a);
    let query = query_of(a)?;
    let mut base = RdpAccountant::new(rel);
    base.compose(&mech, steps).map_err(map_error)?;
    let acc = tuned(&base, Repetitions::Poisson { mean }).map_err(map_error)?;
    let (epsilon, delta) = match query {
        Query::Epsilon { delta } => (acc.epsilon(delta).map_err(map_error)?, delta),
        Query::Delta { epsilon } => (epsilon, acc.delta(epsilon).map_err(map_error)?),
    };
    if a.json {
        let v = json!({
            "epsilon": epsilon,
            "delta": delta,
            "accountant": "rdp",
            "mechanism": a.mechanism.name(),
            "steps": steps,
            "neighbouring": rel.as_str(),
            "tune_trials": mean,
            "seconds": start.elapsed().as_secs_f64(),
        });
        writeln!(out, "{v}").map_err(io)?;
    } else {
        writeln!(
            out,
            "honest tuning: K ~ Poisson({mean}) runs of {steps} x {mech} under {rel}, the best \
             released (Papernot & Steinke 2022), rdp accountant:"
        )
        .map_err(io)?;
        match query {
            Query::Epsilon { .. } => writeln!(
                out,
                "  epsilon = {} at delta = {delta:e}",
                text_up(epsilon, 6)
            ),
            Query::Delta { .. } => writeln!(out, "  delta = {delta:e} at epsilon = {epsilon}"),
        }
        .map_err(io)?;
    }
    Ok(())
}

/// `dpglm account`.
pub(crate) fn account(a: &AccountArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let start = Instant::now();
    a.mechanism.check_flags(false)?;
    let steps = steps_of(a)?;
    if !(a.epsilon_error > 0.0 && a.epsilon_error < 1.0) {
        return Err(CliError::Usage(format!(
            "invalid value for --epsilon-error: {} (must be in (0, 1))",
            crate::mechanism_args::show(a.epsilon_error)
        )));
    }
    if a.mechanism.mechanism == MechanismName::Shuffling {
        return shuffling(a, out, start);
    }
    if let Some(mean) = a.tune_trials {
        return tuning(a, steps, mean, out, start);
    }
    let mech = a.mechanism.build(None)?;
    let q = match a.mechanism.mechanism {
        MechanismName::SubsampledGaussian | MechanismName::GammaBall => {
            a.mechanism.sampling_rate()?
        }
        _ => None,
    };
    let rel = relation(a);
    let chain: Vec<AccountantKind> = match a.accountant {
        Some(k) => vec![AccountantKind::from(k)],
        None => DEFAULT_CHAIN.to_vec(),
    };
    let query = query_of(a)?;
    let config = pld_config(a);
    let parts = [(mech.clone(), steps)];
    let ans = answer_with_fallback(&chain, rel, config, &parts, query).map_err(map_error)?;
    let (epsilon, delta) = match query {
        Query::Epsilon { delta } => (ans.value, delta),
        Query::Delta { epsilon } => (epsilon, ans.value),
    };
    let lower = match (query, a.lower) {
        (Query::Epsilon { delta }, true) => {
            let mut acc = ans.accountant.build_with(rel, config);
            acc.compose(&mech, steps).map_err(map_error)?;
            acc.epsilon_optimistic(delta).map_err(map_error)?
        }
        _ => None,
    };
    let seconds = start.elapsed().as_secs_f64();
    if a.json {
        let fallback: Vec<_> = ans
            .skipped
            .iter()
            .map(|(k, e)| json!({"accountant": k.as_str(), "reason": e.to_string()}))
            .collect();
        let notes: serde_json::Map<String, serde_json::Value> = ans
            .notes
            .iter()
            .map(|n| (n.name.to_string(), note_json(&n.value)))
            .collect();
        let v = json!({
            "epsilon": epsilon,
            "delta": delta,
            "accountant": ans.accountant.as_str(),
            "mechanism": a.mechanism.name(),
            "steps": steps,
            "q": q,
            "neighbouring": rel.as_str(),
            "epsilon_lower": lower,
            "fallback": fallback,
            "notes": notes,
            "seconds": seconds,
        });
        writeln!(out, "{v}").map_err(io)?;
    } else {
        writeln!(
            out,
            "{steps} x {mech} under {rel}, {} accountant:",
            ans.accountant
        )
        .map_err(io)?;
        if let (Some(b), Some(n), Some(q)) = (a.mechanism.batch_size, a.mechanism.n, q) {
            let epochs = a
                .epochs
                .map(|e| format!(", steps = ceil({e} x {n} / {b}) = {steps}"))
                .unwrap_or_default();
            writeln!(out, "  q = batch size / n = {b}/{n} = {q}{epochs}").map_err(io)?;
        }
        for (k, e) in &ans.skipped {
            writeln!(out, "  ({k} accountant could not answer: {e})").map_err(io)?;
        }
        if a.delta.is_some() {
            writeln!(
                out,
                "  epsilon = {} at delta = {delta:e}",
                text_up(epsilon, 6)
            )
            .map_err(io)?;
        } else {
            writeln!(out, "  delta = {delta:e} at epsilon = {epsilon}").map_err(io)?;
        }
        for n in &ans.notes {
            writeln!(out, "  {}: {}", n.name, note_json(&n.value)).map_err(io)?;
        }
        match (lower, a.lower && a.delta.is_some()) {
            (Some(l), _) => {
                writeln!(out, "  optimistic estimate: epsilon >= {}", text_down(l, 6))
                    .map_err(io)?;
            }
            // Asked for but not resolved by the grid (JSON: null), not a trivial 0.
            (None, true) => writeln!(out, "  optimistic estimate: unresolved").map_err(io)?,
            (None, false) => {}
        }
    }
    Ok(())
}

/// `dpglm calibrate`.
pub(crate) fn calibrate(c: &CalibrateArgs, out: &mut dyn Write) -> Result<(), CliError> {
    c.mechanism.check_flags(true)?;
    check_steps(c.steps)?;
    let target = Target::new(c.target_epsilon, c.delta).map_err(|e| match e {
        Error::InvalidParameter {
            name: "epsilon",
            value,
            reason,
        } => CliError::Usage(format!(
            "invalid value for --target-epsilon: {} ({reason})",
            crate::mechanism_args::show(value)
        )),
        other => map_error(other),
    })?;
    let rel = c
        .neighbouring
        .map(Neighbouring::from)
        .unwrap_or_else(|| c.mechanism.natural_relation());
    // Validate the other flags once with a placeholder noise.
    let probe = c.mechanism.build(Some(1.0))?;
    let kind = match c.accountant {
        Some(CalibrationAccountantArg::Pld) => AccountantKind::Pld,
        Some(CalibrationAccountantArg::Rdp) => AccountantKind::Rdp,
        None => accountant_for(None, rel, &probe, 1)?
            .name()
            .parse::<AccountantKind>()
            .map_err(CliError::Failure)?,
    };
    let make = |x: f64| {
        c.mechanism.build(Some(x)).map_err(|e| match e {
            CliError::Usage(m) | CliError::Failure(m) => Error::Numerical(m),
        })
    };
    let cal = calibrate_noise(target, kind, rel, c.steps, make).map_err(map_error)?;
    if c.json {
        let v = json!({
            "sigma": cal.value,
            "epsilon": cal.epsilon,
            "delta": c.delta,
            "accountant": kind.as_str(),
        });
        writeln!(out, "{v}").map_err(io)?;
    } else {
        writeln!(
            out,
            "{} = {} gives epsilon = {} <= {} at delta = {:e} ({} steps, {kind} accountant, {rel})",
            c.mechanism.noise_flag().trim_start_matches("--"),
            text_up(cal.value, 6),
            text_up(cal.epsilon, 6),
            c.target_epsilon,
            c.delta,
            c.steps
        )
        .map_err(io)?;
    }
    Ok(())
}
