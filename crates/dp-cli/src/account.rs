//! `dpglm account` and `dpglm calibrate`.

use std::io::Write;
use std::time::Instant;

use dp_accounting::{Accountant, AccountantKind, Error, Neighbouring, Target, calibrate_noise};
use serde_json::json;

use crate::CliError;
use crate::cli::{AccountArgs, CalibrateArgs, CalibrationAccountantArg};
use crate::mechanism_args::map_error;

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

/// `dpglm account`.
pub(crate) fn account(a: &AccountArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let start = Instant::now();
    a.mechanism.check_flags(false)?;
    let mech = a.mechanism.build(None)?;
    let rel = a
        .neighbouring
        .map(Neighbouring::from)
        .unwrap_or_else(|| a.mechanism.natural_relation());
    let acc = accountant_for(a.accountant.map(AccountantKind::from), rel, &mech, a.steps)?;
    let (epsilon, delta, lower) = match (a.delta, a.epsilon) {
        (Some(d), None) => {
            let e = acc.epsilon(d).map_err(map_error)?;
            (e, d, acc.epsilon_optimistic(d).map_err(map_error)?)
        }
        (None, Some(e)) => (e, acc.delta(e).map_err(map_error)?, None),
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
            "accountant": acc.name(),
            "mechanism": a.mechanism.name(),
            "steps": a.steps,
            "neighbouring": rel.as_str(),
            "epsilon_lower": lower,
            "seconds": seconds,
        });
        writeln!(out, "{v}").map_err(io)?;
    } else {
        writeln!(
            out,
            "{} x {mech} under {rel}, {} accountant:",
            a.steps,
            acc.name()
        )
        .map_err(io)?;
        if a.delta.is_some() {
            writeln!(out, "  epsilon = {epsilon:.6} at delta = {delta:e}").map_err(io)?;
        } else {
            writeln!(out, "  delta = {delta:e} at epsilon = {epsilon}").map_err(io)?;
        }
        if let Some(l) = lower {
            writeln!(out, "  optimistic estimate: epsilon >= {l:.6}").map_err(io)?;
        }
    }
    Ok(())
}

/// `dpglm calibrate`.
pub(crate) fn calibrate(c: &CalibrateArgs, out: &mut dyn Write) -> Result<(), CliError> {
    c.mechanism.check_flags(true)?;
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
            "{} = {:.6} gives epsilon = {:.6} <= {} at delta = {:e} ({} steps, {kind} accountant, {rel})",
            c.mechanism.noise_flag().trim_start_matches("--"),
            cal.value,
            cal.epsilon,
            c.target_epsilon,
            c.delta,
            c.steps
        )
        .map_err(io)?;
    }
    Ok(())
}
