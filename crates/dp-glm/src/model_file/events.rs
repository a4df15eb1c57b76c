//! The privacy event tree as saved in a model file (format 3): each node an object tagged by
//! `kind`, each mechanism by its name and parameters, rebuilt through dp-accounting's
//! validating constructors when read.
//!
//! ```text
//! Event = {"kind": "release", "mechanism": str, "parameters": {name: f64}, "count": u64,
//!          "label": str}
//!       | {"kind": "composed", "events": [Event]}
//!       | {"kind": "self-composed", "count": u64, "event": Event}
//!       | {"kind": "repeat-and-select", "repetitions": {"law": "poisson", "mean": f64}
//!              | {"law": "truncated-negative-binomial", "eta": f64, "gamma": f64},
//!          "event": Event}
//!       | {"kind": "shuffled", "mechanism": str, "parameters": {name: f64}, "n": u64,
//!          "delta0": f64, "label": str}
//! ```

use dp_accounting::{Event, LedgerEntry, Mechanism, Neighbouring, PrivacyEvent, Repetitions};
use serde::{Deserialize, Serialize};

use super::{finite, finite_list, invalid, mechanism, ordered};
use crate::error::Result;

/// One node as saved.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub(super) enum WireEvent {
    Release {
        mechanism: String,
        #[serde(with = "ordered")]
        parameters: Vec<(String, f64)>,
        count: u64,
        label: String,
    },
    Composed {
        events: Vec<WireEvent>,
    },
    SelfComposed {
        count: u64,
        event: Box<WireEvent>,
    },
    RepeatAndSelect {
        repetitions: WireRepetitions,
        event: Box<WireEvent>,
    },
    Shuffled {
        mechanism: String,
        #[serde(with = "ordered")]
        parameters: Vec<(String, f64)>,
        n: u64,
        delta0: f64,
        label: String,
    },
}

/// The law of a repeat-and-select node's number of runs.
#[derive(Serialize, Deserialize)]
#[serde(tag = "law", rename_all = "kebab-case", deny_unknown_fields)]
pub(super) enum WireRepetitions {
    Poisson { mean: f64 },
    TruncatedNegativeBinomial { eta: f64, gamma: f64 },
}

/// A mechanism's name and parameters, each finite (`at` names the node).
fn parameters(at: &str, m: &Mechanism) -> Result<(String, Vec<(String, f64)>)> {
    let params: Vec<(String, f64)> = m
        .parameters()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    Ok((
        m.name().to_string(),
        finite_list(&format!("{at}.parameters"), &params)?,
    ))
}

impl WireEvent {
    /// The node `e` as saved; `at` is its dotted path, for errors.
    pub(super) fn of(e: &Event, at: &str) -> Result<Self> {
        Ok(match e {
            Event::Release(r) => {
                let (mechanism, parameters) = parameters(at, &r.mechanism)?;
                WireEvent::Release {
                    mechanism,
                    parameters,
                    count: r.count,
                    label: r.label.clone(),
                }
            }
            Event::Composed(events) => WireEvent::Composed {
                events: events
                    .iter()
                    .enumerate()
                    .map(|(i, e)| Self::of(e, &format!("{at}.events[{i}]")))
                    .collect::<Result<_>>()?,
            },
            Event::SelfComposed { event, count } => WireEvent::SelfComposed {
                count: *count,
                event: Box::new(Self::of(event, &format!("{at}.event"))?),
            },
            Event::RepeatAndSelect { event, repetitions } => WireEvent::RepeatAndSelect {
                repetitions: match *repetitions {
                    Repetitions::Poisson { mean } => WireRepetitions::Poisson {
                        mean: finite(&format!("{at}.repetitions.mean"), mean)?,
                    },
                    Repetitions::TruncatedNegativeBinomial { eta, gamma } => {
                        WireRepetitions::TruncatedNegativeBinomial {
                            eta: finite(&format!("{at}.repetitions.eta"), eta)?,
                            gamma: finite(&format!("{at}.repetitions.gamma"), gamma)?,
                        }
                    }
                },
                event: Box::new(Self::of(event, &format!("{at}.event"))?),
            },
            Event::Shuffled {
                local,
                n,
                delta0,
                label,
            } => {
                let (mechanism, parameters) = parameters(at, local)?;
                WireEvent::Shuffled {
                    mechanism,
                    parameters,
                    n: *n,
                    delta0: finite(&format!("{at}.delta0"), *delta0)?,
                    label: label.clone(),
                }
            }
        })
    }

    /// The node as read, every mechanism rebuilt through its validating constructor and
    /// every law checked; `at` is its dotted path, for errors.
    fn event(self, at: &str) -> Result<Event> {
        Ok(match self {
            WireEvent::Release {
                mechanism: name,
                parameters,
                count,
                label,
            } => Event::Release(LedgerEntry {
                mechanism: mechanism(&name, &parameters).map_err(|r| invalid(at, r))?,
                count,
                label,
            }),
            WireEvent::Composed { events } => Event::Composed(
                events
                    .into_iter()
                    .enumerate()
                    .map(|(i, e)| e.event(&format!("{at}.events[{i}]")))
                    .collect::<Result<_>>()?,
            ),
            WireEvent::SelfComposed { count, event } => Event::SelfComposed {
                event: Box::new(event.event(&format!("{at}.event"))?),
                count,
            },
            WireEvent::RepeatAndSelect { repetitions, event } => {
                let repetitions = match repetitions {
                    WireRepetitions::Poisson { mean } => Repetitions::Poisson { mean },
                    WireRepetitions::TruncatedNegativeBinomial { eta, gamma } => {
                        Repetitions::TruncatedNegativeBinomial { eta, gamma }
                    }
                };
                repetitions
                    .mean()
                    .map_err(|e| invalid(format!("{at}.repetitions"), e.to_string()))?;
                Event::RepeatAndSelect {
                    event: Box::new(event.event(&format!("{at}.event"))?),
                    repetitions,
                }
            }
            WireEvent::Shuffled {
                mechanism: name,
                parameters,
                n,
                delta0,
                label,
            } => Event::Shuffled {
                local: mechanism(&name, &parameters).map_err(|r| invalid(at, r))?,
                n,
                delta0,
                label,
            },
        })
    }

    /// The tree under `rel`, checked ([`PrivacyEvent::new`]); `at` is the root's path.
    pub(super) fn tree(self, rel: Neighbouring, at: &str) -> Result<PrivacyEvent> {
        let root = self.event(at)?;
        PrivacyEvent::new(rel, root).map_err(|e| invalid(at, e.to_string()))
    }
}

/// A privacy event tree with its relation, serialisable on its own (a budget file's entries):
/// `{"neighbouring": "add-remove"|"replace-one", "event": Event}`, the layout above. Reading
/// rebuilds every mechanism through its validating constructor and checks the relation.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent(pub PrivacyEvent);

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireStored {
    neighbouring: String,
    event: WireEvent,
}

impl Serialize for StoredEvent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        WireStored {
            neighbouring: self.0.neighbouring().as_str().to_string(),
            event: WireEvent::of(self.0.root(), "event").map_err(serde::ser::Error::custom)?,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for StoredEvent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let w = WireStored::deserialize(d)?;
        let rel: Neighbouring = w.neighbouring.parse().map_err(serde::de::Error::custom)?;
        w.event
            .tree(rel, "event")
            .map(StoredEvent)
            .map_err(serde::de::Error::custom)
    }
}
