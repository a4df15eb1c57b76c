//! Small text-formatting helpers shared by the CSV, Markdown and SVG writers.

use crate::error::{Error, Result};

/// Check that `id` is usable as a file stem: non-empty, ASCII letters, digits, `-`, `_`, `.`,
/// and not starting with `.`.
pub(crate) fn check_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArtifact {
            id: id.to_owned(),
            reason: "ids may only contain ASCII letters, digits, '-', '_' and '.', \
                     and may not be empty or start with '.'"
                .to_owned(),
        })
    }
}

/// A number for CSV: shortest representation that parses back to the same `f64`
/// (`inf`, `-inf` and `nan` for non-finite values).
pub(crate) fn csv_number(v: f64) -> String {
    if v.is_nan() {
        "nan".to_owned()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.to_owned()
    } else {
        // `Debug` round-trips and switches to exponent notation for very large or small values.
        format!("{v:?}")
    }
}

/// A CSV field, quoted (RFC 4180) when it contains a comma, quote or line break.
pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// A number for people: about `digits` significant digits, exponent notation when very large
/// or small, no trailing zeros.
pub(crate) fn human_number(v: f64, digits: usize) -> String {
    if !v.is_finite() {
        return csv_number(v);
    }
    if v == 0.0 {
        return "0".to_owned();
    }
    let digits = digits.max(1);
    let magnitude = v.abs().log10().floor();
    if (-3.0..6.0).contains(&magnitude) {
        // `magnitude` is a small integer here, so the cast is exact.
        let decimals = (digits as i64 - 1 - magnitude as i64).max(0) as usize;
        trim_zeros(format!("{v:.decimals$}"))
    } else {
        let s = format!("{v:.prec$e}", prec = digits - 1);
        match s.split_once('e') {
            Some((mantissa, exp)) => format!("{}e{exp}", trim_zeros(mantissa.to_owned())),
            None => s,
        }
    }
}

/// A measured number for a table: exactly `digits` significant digits (trailing zeros kept,
/// so that a column reads with one precision), exponent notation when very large or small.
pub(crate) fn significant(v: f64, digits: usize) -> String {
    if !v.is_finite() {
        return csv_number(v);
    }
    let digits = digits.max(1);
    if v == 0.0 {
        return format!("{v:.prec$}", prec = digits - 1);
    }
    // Round first: 99.996 to 4 digits is 100.0, whose magnitude is one more.
    let rounded: f64 = format!("{v:.prec$e}", prec = digits - 1)
        .parse()
        .unwrap_or(v);
    let magnitude = rounded.abs().log10().floor();
    if (-3.0..6.0).contains(&magnitude) {
        // `magnitude` is a small integer here, so the cast is exact.
        let decimals = (digits as i64 - 1 - magnitude as i64).max(0) as usize;
        format!("{v:.decimals$}")
    } else {
        format!("{v:.prec$e}", prec = digits - 1)
    }
}

/// A set parameter (ε, δ, a size) as given: the shortest form that reads back to the value,
/// `1e-5` rather than `0.00001` for small and `1e7` for large values.
pub(crate) fn parameter(v: f64) -> String {
    if v.is_finite() && v != 0.0 && !(1e-3..1e6).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        csv_number(v).trim_end_matches(".0").to_owned()
    }
}

fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// A Markdown table cell: pipes escaped, line breaks flattened.
pub(crate) fn markdown_cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_numbers_round_trip() {
        for v in [
            0.0,
            -0.0,
            1.0,
            0.1,
            1.0 / 3.0,
            1e-300,
            6.02e23,
            f64::MAX,
            f64::MIN_POSITIVE,
        ] {
            let parsed: f64 = csv_number(v).parse().unwrap_or(f64::NAN);
            assert_eq!(parsed.to_bits(), v.to_bits(), "{v}");
        }
        assert_eq!(csv_number(f64::INFINITY), "inf");
        assert_eq!(csv_number(f64::NEG_INFINITY), "-inf");
        assert_eq!(csv_number(f64::NAN), "nan");
    }

    #[test]
    fn human_numbers() {
        assert_eq!(human_number(0.30000000000000004, 4), "0.3");
        assert_eq!(human_number(128.0, 4), "128");
        assert_eq!(human_number(1.0 / 3.0, 4), "0.3333");
        assert_eq!(human_number(1234.5678, 4), "1235");
        assert_eq!(human_number(1e-7, 4), "1e-7");
        assert_eq!(human_number(2.5e9, 4), "2.5e9");
        assert_eq!(human_number(0.0, 4), "0");
    }

    #[test]
    fn significant_digits_and_parameters() {
        assert_eq!(significant(95.3, 4), "95.30");
        assert_eq!(significant(0.129, 4), "0.1290");
        assert_eq!(significant(-0.07472, 4), "-0.07472");
        assert_eq!(significant(99.996, 4), "100.0");
        assert_eq!(significant(84.0, 4), "84.00");
        assert_eq!(significant(1234.5678, 4), "1235");
        assert_eq!(significant(2.5e-5, 4), "2.500e-5");
        assert_eq!(significant(0.0, 4), "0.000");
        assert_eq!(parameter(0.1), "0.1");
        assert_eq!(parameter(8.0), "8");
        assert_eq!(parameter(1e-5), "1e-5");
        assert_eq!(parameter(36_176.0), "36176");
        assert_eq!(parameter(f64::INFINITY), "inf");
    }

    #[test]
    fn fields_are_quoted_when_needed() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn ids() {
        assert!(check_id("rdp-curves_1.v2").is_ok());
        for bad in ["", ".hidden", "a/b", "a b", "é"] {
            assert!(check_id(bad).is_err(), "{bad:?}");
        }
    }
}
