"""Type stubs of the native module ``dpglm._dpglm`` (re-exported by ``dpglm.accounting``)."""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str

class DPGLMError(Exception):
    """Base class of every error dpglm raises."""

class InvalidParameterError(DPGLMError):
    """A parameter is outside the domain where the guarantee holds."""

class UnsupportedError(DPGLMError):
    """The accountant cannot analyse this event or neighbouring relation."""

class OutOfRangeError(DPGLMError):
    """The question is outside what the accountant can resolve."""

class NumericalError(DPGLMError):
    """A numerical procedure failed."""

class SelfCheckError(DPGLMError):
    """An answer failed a check every valid upper bound passes."""

class CalibrationError(DPGLMError):
    """No parameter in the searched range meets the target."""

class BudgetExceededError(DPGLMError):
    """A fit would take a Budget's recorded fits past its total: nothing was read or fitted."""

class InvalidInputError(DPGLMError, ValueError):
    """Invalid data: shapes, non-finite values, labels outside the public class pair."""

# -- the estimators' native side (used by dpglm.LogisticRegression / LinearRegression) --------

Rows = Union[npt.NDArray[np.float64], npt.NDArray[np.float32], Any]
"""Feature rows: a 2-d float64 array (read in place, C or Fortran order), a 2-d float32 array
(never widened whole), or a canonical ``scipy.sparse`` CSR matrix or array with float64 values
(read through its ``indptr``, ``indices``, ``data`` and ``shape``; ``dpglm``'s estimators
convert the other formats, sum duplicates and sort the columns first)."""

def learners() -> List[Dict[str, Any]]:
    """The learner registry: ``name``, ``doc``, ``losses`` ("any" or "squared"), ``sparse``
    (whether it fits sparse rows without densifying them) and ``params`` (dicts with
    ``name``, ``kind``, ``default``, ``doc``)."""

class Budget:
    """A privacy budget of ``(epsilon, delta)`` shared by the fits given it (``budget=``):
    each fit is admitted from its own epsilon and delta before it touches the data, or
    refused with ``BudgetExceededError`` saying what is left; an admitted fit's privacy event
    tree is recorded before the model is returned. With ``path`` it lives in that file
    (``dpglm budget new`` / ``dpglm train --budget``; opened if it exists, its totals must
    match), locked and replaced atomically; copies are the same budget."""

    epsilon: float
    delta: float
    path: Optional[str]
    def __init__(
        self, epsilon: float, delta: float, path: Optional[str] = None, accountant: str = "pld"
    ) -> None: ...
    def spent(self) -> float:
        """The epsilon the recorded fits spend together at the budget's delta."""
    def left(self, delta: float) -> float:
        """The most epsilon a fit at ``delta`` may still ask for (0 when none is left)."""
    def fits(self) -> List[Dict[str, Any]]:
        """The recorded fits: ``label``, ``epsilon``, ``delta``."""

class Model:
    """A fitted dpglm linear model with its preprocessing (scores raw rows)."""

    coef: npt.NDArray[np.float64]
    intercept: float
    n_features_in: int
    def decision_function(self, x: Rows) -> npt.NDArray[np.float64]:
        """``⟨w, φ(x)⟩ + b`` of each raw row (sparse rows: sparse dot products, or densified
        a block of rows at a time for a model with a feature scaling)."""
    def predict_proba(self, x: Rows) -> Optional[npt.NDArray[np.float64]]:
        """The probability of the positive class of each row (logistic loss; else ``None``)."""
    def to_json(self) -> str: ...
    @staticmethod
    def from_json(text: str) -> "Model": ...

def fit(
    x: Rows,
    y: npt.NDArray[np.float64],
    *,
    algorithm: str,
    loss: str,
    epsilon: float,
    delta: float,
    params: Dict[str, Any],
    scale: str,
    feature_ranges: Optional[Sequence[Tuple[float, float]]],
    unit_norm: Optional[bool],
    bias: Optional[float],
    bounds_budget: Optional[float],
    random_state: Optional[int],
    feature_names: Optional[List[str]],
    classes: Optional[Tuple[str, str]],
    budget: Optional["Budget"] = None,
) -> Tuple[Model, str, bool, List[str]]:
    """One private fit (the GIL released): the model, the privacy statement, whether it is a
    private release, and warnings. float32 rows stay in float32 storage when the fit leaves
    their values as they are (no scaling, no unit-norm rows, a bias float32 holds), else they
    are widened; sparse rows stay sparse when the learner fits them and no feature scaling is
    asked (``scale="auto"`` is none for them), else they are densified and a warning says
    why."""

class NeighboringRelation:
    """The neighbouring relation of a guarantee."""

    ADD_OR_REMOVE_ONE: "NeighboringRelation"
    REPLACE_ONE: "NeighboringRelation"

Relation = Union[NeighboringRelation, str]
"""A relation, or its name: ``"add-remove"`` or ``"replace-one"``."""

class DpEvent:
    """Base class of the privacy events (immutable, picklable, validated on construction)."""

    def mechanisms(self) -> List[Tuple[str, List[Tuple[str, float]], int]]:
        """The mechanisms the event composes, as ``(name, parameters, count)``."""
    def to_dp_accounting(self, without_grid_slack: bool = False) -> Any:
        """The event as Google's ``dp_accounting`` objects (``UnsupportedError`` naming a
        part it has no event for: objective perturbation, AMP, grid slack, shuffling).
        ``without_grid_slack=True``: grid releases as their continuous Gaussian (a lower
        reference for dpglm's price)."""

class ModelDpEvent(DpEvent):
    """A fitted model's whole privacy event tree (``model.privacy_event_``), from its JSON
    as a model file stores it; accountants compose it (``get_epsilon`` only)."""

    neighbouring: str
    def __init__(self, tree_json: str) -> None: ...
    def to_json(self) -> str: ...

class GaussianDpEvent(DpEvent):
    """Gaussian noise of standard deviation ``noise_multiplier`` on a query of the given
    per-record sensitivity (both relations)."""

    def __init__(self, noise_multiplier: float, sensitivity: float = 1.0) -> None: ...

class LaplaceDpEvent(DpEvent):
    """Laplace noise of scale ``noise_multiplier`` on a query of L1 sensitivity
    ``sensitivity`` (both relations)."""

    def __init__(self, noise_multiplier: float, sensitivity: float = 1.0) -> None: ...

class PureDpEvent(DpEvent):
    """Any epsilon-DP mechanism."""

    def __init__(self, epsilon: float) -> None: ...

class ZCdpDpEvent(DpEvent):
    """A rho-zCDP mechanism (RDP and zCDP accountants)."""

    def __init__(self, rho: float) -> None: ...

class GammaBallDpEvent(DpEvent):
    """Noise with density proportional to exp(-|z|/scale) in dimension ``dim``."""

    def __init__(self, scale: float, dim: int, sensitivity: float = 1.0) -> None: ...

class ObjectivePerturbationDpEvent(DpEvent):
    """Objective perturbation releasing the exact minimiser (add/remove)."""

    def __init__(self, sigma: float, lam: float, beta: float, lipschitz: float) -> None: ...

class ApproximateMinimaPerturbationDpEvent(DpEvent):
    """Approximate minima perturbation (add/remove)."""

    def __init__(
        self,
        sigma: float,
        lam: float,
        beta: float,
        lipschitz: float,
        tau: float,
        sigma_out: float,
    ) -> None: ...

class PoissonSampledDpEvent(DpEvent):
    """``event`` on a Poisson-sampled batch (add/remove); ``event`` is a Gaussian or
    Gamma-ball event."""

    def __init__(self, sampling_probability: float, event: DpEvent) -> None: ...

class SampledWithoutReplacementDpEvent(DpEvent):
    """``event`` (a Gaussian) on a batch of ``sample_size`` of ``source_dataset_size``
    records drawn without replacement (replace-one; RDP accountant)."""

    def __init__(self, source_dataset_size: int, sample_size: int, event: DpEvent) -> None: ...

class SelfComposedDpEvent(DpEvent):
    """``count`` independent applications of ``event``."""

    def __init__(self, event: DpEvent, count: int) -> None: ...

class ComposedDpEvent(DpEvent):
    """The composition of the events."""

    def __init__(self, events: Sequence[DpEvent]) -> None: ...

class RepeatAndSelectDpEvent(DpEvent):
    """``event`` run a random number of times, the best run released (Papernot & Steinke).
    ``shape=inf``: Poisson with ``mean``; finite shape: truncated negative binomial with
    ``gamma``. RDP accountant only, composed alone."""

    def __init__(
        self,
        event: DpEvent,
        mean: Optional[float] = None,
        shape: float = ...,
        gamma: Optional[float] = None,
    ) -> None: ...

class PrivacyAccountant:
    """Base class of the accountants."""

    @property
    def name(self) -> str: ...
    @property
    def neighboring_relation(self) -> NeighboringRelation: ...
    @property
    def events(self) -> List[Tuple[DpEvent, int]]: ...
    def compose(self, event: DpEvent, count: int = 1) -> "PrivacyAccountant":
        """Adds ``count`` applications of ``event``; returns the accountant."""
    def supports(self, event: DpEvent) -> bool:
        """Whether the accountant can analyse ``event`` under its relation."""
    def get_epsilon(self, target_delta: float) -> float:
        """The smallest epsilon with (epsilon, target_delta)-DP, rounded up."""
    def get_delta(self, target_epsilon: float) -> float:
        """delta at ``target_epsilon``, rounded up."""
    def get_epsilon_lower(self, target_delta: float) -> Optional[float]:
        """An optimistic estimate of epsilon (PLD only); not a guarantee."""
    def notes(self, target_delta: float) -> Dict[str, Any]:
        """How the answer epsilon(delta) is computed."""
    def mechanisms(self) -> List[Tuple[str, List[Tuple[str, float]], int]]:
        """The composed mechanisms as ``(name, parameters, count)``."""

class PLDAccountant(PrivacyAccountant):
    """Privacy-loss-distribution accountant (connect-the-dots, FFT composition)."""

    def __init__(
        self,
        neighboring_relation: Optional[Relation] = None,
        value_discretization_interval: float = 2e-4,
        epsilon_error: Optional[float] = 1e-3,
        tail_mass: float = 1e-15,
        max_grid: int = 4194304,
    ) -> None: ...
    def compose(self, event: DpEvent, count: int = 1) -> "PLDAccountant": ...

class RdpAccountant(PrivacyAccountant):
    """Renyi-DP accountant over a grid of orders."""

    def __init__(
        self,
        orders: Optional[Sequence[float]] = None,
        neighboring_relation: Optional[Relation] = None,
    ) -> None: ...
    def compose(self, event: DpEvent, count: int = 1) -> "RdpAccountant": ...
    def get_rdp_curve(self) -> Tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """The composed curve: ``(orders, epsilons)``."""

class ZCdpAccountant(PrivacyAccountant):
    """Zero-concentrated-DP accountant."""

    def __init__(self, neighboring_relation: Optional[Relation] = None) -> None: ...
    def compose(self, event: DpEvent, count: int = 1) -> "ZCdpAccountant": ...

class ExactAccountant(PrivacyAccountant):
    """Closed forms where they are tight."""

    def __init__(self, neighboring_relation: Optional[Relation] = None) -> None: ...
    def compose(self, event: DpEvent, count: int = 1) -> "ExactAccountant": ...

class Answer:
    """The answer of :func:`account`."""

    epsilon: float
    delta: float
    accountant: str
    neighboring_relation: NeighboringRelation
    fallback: List[Tuple[str, str]]
    notes: Dict[str, Any]

class Calibration:
    """The result of a calibration."""

    value: float
    epsilon: float

def account(
    event: DpEvent,
    *,
    delta: Optional[float] = None,
    epsilon: Optional[float] = None,
    accountant: Optional[str] = None,
    neighboring_relation: Optional[Relation] = None,
    epsilon_error: Optional[float] = 1e-3,
    max_grid: int = 4194304,
) -> Answer:
    """epsilon at ``delta`` or delta at ``epsilon`` (exactly one), from the named accountant
    or the first of PLD, exact and RDP that can answer."""

def epsilon(
    event: DpEvent,
    delta: float,
    *,
    accountant: Optional[str] = None,
    neighboring_relation: Optional[Relation] = None,
) -> float:
    """epsilon of ``event`` at ``delta``."""

def delta(
    event: DpEvent,
    epsilon: float,
    *,
    accountant: Optional[str] = None,
    neighboring_relation: Optional[Relation] = None,
) -> float:
    """delta of ``event`` at ``epsilon``."""

def gaussian_epsilon(sigma: float, delta: float, sensitivity: float = 1.0) -> float: ...
def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float: ...
def gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float: ...
def zcdp_epsilon(rho: float, delta: float) -> float: ...
def zcdp_delta(rho: float, epsilon: float) -> float: ...
def shuffle_epsilon(
    eps0: float, n: int, delta: float, delta0: float = 0.0
) -> Tuple[float, float, str]:
    """``(epsilon, total_delta, method)`` of one shuffled round (replace-one)."""

def shuffle_delta(eps0: float, n: int, epsilon: float, delta0: float = 0.0) -> float: ...
def calibrate_noise(
    make_event: Callable[[float], DpEvent],
    target_epsilon: float,
    target_delta: float,
    *,
    accountant: str = "pld",
    neighboring_relation: Optional[Relation] = None,
) -> Calibration:
    """The least noise meeting the target."""

def calibrate_sampling_rate(
    make_event: Callable[[float], DpEvent],
    target_epsilon: float,
    target_delta: float,
    *,
    accountant: str = "pld",
    neighboring_relation: Optional[Relation] = None,
) -> Calibration:
    """The largest sampling rate meeting the target."""

def calibrate_steps(
    event: DpEvent,
    target_epsilon: float,
    target_delta: float,
    *,
    accountant: str = "pld",
    neighboring_relation: Optional[Relation] = None,
) -> Calibration:
    """The largest number of steps of ``event`` meeting the target."""
