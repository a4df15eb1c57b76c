//! Neighbouring relations between datasets.

use std::fmt;
use std::str::FromStr;

/// Which pairs of datasets a guarantee protects.
///
/// Every mechanism and every accountant states its relation; composing a mechanism into an
/// accountant with another relation is an error, never a silent conversion (MATH §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Neighbouring {
    /// One dataset has one more record than the other. A sum of per-record vectors of norm
    /// `≤ C` has L2 sensitivity `C`. Default of Opacus and Google's dp_accounting; paper 001.
    AddRemove,
    /// One record is swapped for another. The same sum has sensitivity `2C`. Papers 000, 002,
    /// 003 and 004.
    ReplaceOne,
}

impl Neighbouring {
    /// The factor by which a per-record contribution bound `C` becomes the L2 sensitivity of a
    /// sum: 1 for add/remove, 2 for replace-one.
    pub fn sum_sensitivity_factor(self) -> f64 {
        match self {
            Neighbouring::AddRemove => 1.0,
            Neighbouring::ReplaceOne => 2.0,
        }
    }

    /// The name used on the command line and in reports (`add-remove`, `replace-one`).
    pub fn as_str(self) -> &'static str {
        match self {
            Neighbouring::AddRemove => "add-remove",
            Neighbouring::ReplaceOne => "replace-one",
        }
    }
}

impl fmt::Display for Neighbouring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Neighbouring {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "add-remove" => Ok(Neighbouring::AddRemove),
            "replace-one" => Ok(Neighbouring::ReplaceOne),
            other => Err(format!(
                "unknown neighbouring relation `{other}` (expected add-remove or replace-one)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_factors() {
        for n in [Neighbouring::AddRemove, Neighbouring::ReplaceOne] {
            assert_eq!(n.as_str().parse::<Neighbouring>(), Ok(n));
        }
        assert!("both".parse::<Neighbouring>().is_err());
        assert_eq!(Neighbouring::ReplaceOne.sum_sensitivity_factor(), 2.0);
        assert_eq!(Neighbouring::AddRemove.sum_sensitivity_factor(), 1.0);
    }
}
