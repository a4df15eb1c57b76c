"""dpglm: differentially private linear models and tight privacy accounting.

The numbers come from the dpglm Rust crates; this package exposes them to Python.

* :class:`LogisticRegression` and :class:`LinearRegression` -- private linear models with
  scikit-learn's conventions (``fit``, ``predict``, ``get_params``, ...), the learners of the
  Rust registry the ``dpglm`` CLI reads; ``privacy_report_`` holds the event tree and the
  plain-language privacy statement.
* :class:`Budget` -- one privacy budget across many fits on the same rows (``budget=``), in
  memory or in a file ``dpglm train --budget`` shares.
* :mod:`dpglm.accounting` -- privacy events composed into accountants (PLD, RDP, zCDP,
  exact), epsilon(delta), delta(epsilon), calibration, private tuning and shuffling, named
  as in Google's ``dp_accounting``.

Every error is a :class:`DPGLMError` carrying the Rust message (bad data: also a
``ValueError``, :class:`InvalidInputError`). Importing ``dpglm`` does not
import numpy, scikit-learn or pandas.
"""

from dpglm._dpglm import (
    Budget,
    BudgetExceededError,
    CalibrationError,
    DPGLMError,
    InvalidInputError,
    InvalidParameterError,
    NumericalError,
    OutOfRangeError,
    SelfCheckError,
    UnsupportedError,
    __version__,
)
from dpglm import accounting
from dpglm._estimators import LinearRegression, LogisticRegression, NotFittedError

__all__ = [
    "Budget",
    "BudgetExceededError",
    "CalibrationError",
    "DPGLMError",
    "InvalidInputError",
    "InvalidParameterError",
    "LinearRegression",
    "LogisticRegression",
    "NotFittedError",
    "NumericalError",
    "OutOfRangeError",
    "SelfCheckError",
    "UnsupportedError",
    "__version__",
    "accounting",
]
