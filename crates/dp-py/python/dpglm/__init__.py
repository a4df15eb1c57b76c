"""dpglm: differentially private linear models and tight privacy accounting.

The numbers come from the dpglm Rust crates; this package exposes them to Python.

* :mod:`dpglm.accounting` -- privacy events composed into accountants (PLD, RDP, zCDP,
  exact), epsilon(delta), delta(epsilon), calibration, private tuning and shuffling, named
  as in Google's ``dp_accounting``.

Every error is a :class:`DPGLMError` carrying the Rust message. Importing ``dpglm`` does not
import numpy, scikit-learn or pandas.
"""

from dpglm._dpglm import (
    CalibrationError,
    DPGLMError,
    InvalidParameterError,
    NumericalError,
    OutOfRangeError,
    SelfCheckError,
    UnsupportedError,
    __version__,
)
from dpglm import accounting

__all__ = [
    "CalibrationError",
    "DPGLMError",
    "InvalidParameterError",
    "NumericalError",
    "OutOfRangeError",
    "SelfCheckError",
    "UnsupportedError",
    "__version__",
    "accounting",
]
