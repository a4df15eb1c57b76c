"""Private linear models with scikit-learn's conventions, fitted by the dpglm Rust learners.

The learners, their parameters and defaults are those of the Rust registry
(``dp_glm::catalog``, the one the ``dpglm train`` CLI reads): this module holds no learner
logic. Each constructor takes the target ``(epsilon, delta)``, the ``algorithm`` (a registry
name) and every parameter of the registry's learners for the loss as a keyword defaulting to
``None`` ("the learner's default"); ``fit`` sends the ones given to the chosen learner, which
refuses a parameter it does not use (nothing is ignored silently).

scikit-learn's estimator protocol (``get_params``/``set_params``, ``__sklearn_tags__``,
``clone``-ability, ``__repr__``) is implemented here without inheriting from scikit-learn, so
``import dpglm`` imports neither scikit-learn nor numpy nor pandas; scikit-learn is imported
only when scikit-learn itself asks for the tags.
"""

import sys

from dpglm import _dpglm
from dpglm._dpglm import DPGLMError, InvalidInputError, InvalidParameterError

__all__ = ["LinearRegression", "LogisticRegression", "NotFittedError"]


class NotFittedError(DPGLMError, ValueError, AttributeError):
    """The estimator is used before ``fit`` (a ``ValueError`` and ``AttributeError``, as
    scikit-learn's)."""


# The estimator's own parameters, before the learners' (keyword: default).
_COMMON = {
    "epsilon": 1.0,
    "delta": 1e-5,
    "algorithm": None,  # set per class
    "classes": None,
    "scale": "auto",
    "feature_ranges": None,
    "preprocess": "auto",
    "bias": 1.0,
    "bounds_budget": None,
    "random_state": None,
    "budget": None,
}


def _sklearn_class(name, fallback):
    """scikit-learn's exception or warning class ``name`` when scikit-learn is already
    imported (its checks then recognise ours), else ``fallback``."""
    exceptions = sys.modules.get("sklearn.exceptions")
    return getattr(exceptions, name, fallback) if exceptions is not None else fallback


def _not_fitted(message):
    sk = _sklearn_class("NotFittedError", None)
    if sk is None:
        return NotFittedError(message)
    both = type("NotFittedError", (NotFittedError, sk), {"__module__": "dpglm"})
    return both(message)


def _learner_params(regression):
    """The learners' parameter names for the loss family, in registry order (no duplicates)."""
    names = []
    for learner in _dpglm.learners():
        if not regression and learner["losses"] == "squared":
            continue
        for p in learner["params"]:
            if p["name"] not in names:
                names.append(p["name"])
    return names




def _is_dataframe(x):
    """A pandas DataFrame (or alike) without importing pandas."""
    return hasattr(x, "columns") and hasattr(x, "dtypes") and hasattr(x, "to_numpy")


def _features(x, expected=None, names=None, who="estimator"):
    """``x`` as a 2-d float32/float64 array (C or Fortran order kept) or a canonical
    ``scipy.sparse`` CSR matrix (``_sparse_rows``), and its column names."""
    import numpy as np

    got_names = None
    if _is_dataframe(x):
        cols = list(x.columns)
        if all(isinstance(c, str) for c in cols):
            _unique_names(cols)
            got_names = cols
        x = x.to_numpy()
    sparse = sys.modules.get("scipy.sparse")
    if sparse is not None and sparse.issparse(x):
        return _sparse_rows(x, expected, who), got_names
    if hasattr(x, "toarray") or hasattr(x, "tocsr"):
        raise InvalidInputError(
            f"{who} takes scipy.sparse matrices and dense arrays, not {type(x).__name__}: "
            "pass a dense array (X.toarray()) or a scipy.sparse matrix"
        )
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"X cannot be read as a numeric array: {e}") from None
    if arr.dtype.kind == "c":
        raise InvalidInputError("Complex data not supported: X must be real")
    if arr.dtype not in (np.float64, np.float32):
        arr = _numeric(arr.astype, np.float64)
    if arr.ndim != 2:
        raise InvalidInputError(
            f"Expected 2D array, got {arr.ndim}D array instead. Reshape your data either using "
            "X.reshape(-1, 1) if it has a single feature or X.reshape(1, -1) if it is a single "
            "sample"
        )
    _check_shape(arr.shape, expected, who)
    if names is not None and got_names is not None and got_names != names:
        raise InvalidInputError(
            f"The feature names should match those that were passed during fit: got {got_names}, "
            f"fitted with {names}"
        )
    if not np.isfinite(arr).all():
        i, j = np.argwhere(~np.isfinite(arr))[0]
        raise _non_finite(arr[i, j], i, j)
    return arr, got_names


def _unique_names(cols):
    """Column names that are the features' names must name one column each."""
    seen = {}
    for j, c in enumerate(cols):
        if c in seen:
            raise InvalidInputError(
                f"X has two columns named {c!r} (columns {seen[c]} and {j}): feature names "
                "must be unique; rename one (e.g. X.columns = [...]) or pass X.to_numpy()"
            )
        seen[c] = j


def _check_shape(shape, expected, who):
    """At least one row and one column, and ``expected`` columns when given."""
    if shape[0] == 0:
        raise InvalidInputError(f"Found array with 0 sample(s) (shape={shape}) while a minimum of 1 is required.")
    if shape[1] == 0:
        raise InvalidInputError(f"Found array with 0 feature(s) (shape={shape}) while a minimum of 1 is required.")
    if expected is not None and shape[1] != expected:
        raise InvalidInputError(
            f"X has {shape[1]} features, but {who} is expecting {expected} features as input"
        )


def _non_finite(value, row, col):
    """The error for a NaN or infinite value of X."""
    return InvalidInputError(
        f"Input X contains NaN or infinity: {value} at row {row}, column {col}"
    )


class _NonNumericError(InvalidInputError, TypeError):
    """Values of X that are not numbers: an ``InvalidInputError`` and, as scikit-learn expects
    of such data, a ``TypeError``."""


def _sparse_rows(x, expected, who):
    """A ``scipy.sparse`` matrix or array as canonical CSR with float64 values, never
    densified. Its structure is checked first (``_sparse_structure``: no scipy routine reads a
    malformed matrix, as they read it unchecked); then CSR is read as it is, other formats
    (CSC, COO, ...) converted to CSR (a copy), non-float64 values converted first (a copy),
    and unless each row's columns increase (``_sorted_rows``) duplicate entries summed and
    columns sorted, on a copy (``sum_duplicates``: the matrix means the sum of its
    duplicates, as ``toarray()`` does). A non-finite value is an
    ``InvalidInputError`` naming its row and column."""
    import numpy as np

    x = _sparse_structure(x, expected, who)
    if x.dtype != np.float64:
        x = _numeric(x.astype, np.float64)
    if x.format != "csr":
        x = x.tocsr()
    if not _sorted_rows(x):
        x = x.copy()
        x.has_canonical_format = False  # scipy's flag is cached: stale after an edit
        x.sum_duplicates()
    bad = np.flatnonzero(~np.isfinite(x.data))
    if bad.size:
        row = int(np.searchsorted(x.indptr, bad[0], side="right")) - 1
        raise _non_finite(x.data[bad[0]], row, x.indices[bad[0]])
    return x


def _sorted_rows(x):
    """Whether each row of the CSR matrix ``x`` (checked) has increasing columns — read
    from its arrays, not from scipy's cached ``has_canonical_format`` (stale once an array
    was edited in place)."""
    import numpy as np

    increasing = np.diff(x.indices) > 0
    starts = x.indptr[1:-1]
    increasing[starts[(starts > 0) & (starts < x.indices.shape[0])] - 1] = True
    return bool(increasing.all())


def _sparse_structure(x, expected, who):
    """``x`` with its structure checked before anything reads it, as CSR, CSC or COO (the
    other formats converted to COO once their own arrays are checked): a 2-d shape with rows
    and columns (``expected`` of them when given), real values, and index arrays that fit
    it — an ``InvalidInputError`` naming the row (or column, entry) otherwise. Index arrays
    of an integer type other than int32/int64 are converted, and stored entries past the
    last row pointer dropped (a copy), so that the scipy routines and the native side read
    exactly the entries checked."""
    import numpy as np

    if len(x.shape) != 2:
        raise InvalidInputError(f"Expected a 2D sparse matrix, got shape {x.shape}")
    _check_shape(x.shape, expected, who)
    n, d = x.shape
    fmt = x.format
    data = _part(x, "data", None) if fmt in ("csr", "csc", "coo", "dia", "bsr") else None
    if (x.dtype if data is None else data.dtype).kind == "c":
        raise InvalidInputError("Complex data not supported: X must be real")
    if fmt in ("csr", "csc"):
        lines, length, line, across = (n, d, "row", "columns") if fmt == "csr" else (d, n, "column", "rows")
        parts = _compressed(x, data, lines, length, line, across)
        if any(a is not b for a, b in zip(parts, (x.data, x.indices, x.indptr))):
            x = type(x)(parts, shape=x.shape, copy=False)
        return x
    if fmt == "coo":
        return _coordinates(x, data)
    if fmt == "lil":
        _lil_lengths(x)
    elif fmt == "dia":
        offsets = _part(x, "offsets", 1)
        if data.ndim != 2 or len(offsets) != data.shape[0]:
            raise InvalidInputError(
                f"X (dia): data has shape {data.shape} for {len(offsets)} offsets (one row of "
                "data per offset)"
            )
    elif fmt == "bsr":
        r, c = x.blocksize
        if data.ndim != 3 or data.shape[1:] != (r, c) or n % r or d % c:
            raise InvalidInputError(
                f"X (bsr): data has shape {data.shape} for blocks {(r, c)} of a {n} x {d} matrix"
            )
        _compressed(x, data, n // r, d // c, "block row", "block columns")
    try:
        coo = x.tocoo()
    except (TypeError, ValueError, IndexError, OverflowError) as e:
        raise InvalidInputError(f"X ({fmt}) cannot be read as a sparse matrix: {e}") from None
    return _coordinates(coo, _part(coo, "data", None))


def _numeric(convert, dtype):
    """``convert(dtype)``: the values of X as numbers, or the error naming X."""
    try:
        return convert(dtype)
    except TypeError as e:
        raise _NonNumericError(f"X must be numeric: {e}") from None
    except ValueError as e:
        raise InvalidInputError(f"X must be numeric: {e}") from None


def _part(x, name, ndim):
    """The array ``x.<name>`` (``ndim`` dimensions unless ``None``; an integer type for an
    index array), refused naming it otherwise."""
    import numpy as np

    a = getattr(x, name, None)
    if not isinstance(a, np.ndarray):
        raise InvalidInputError(f"X ({x.format}): {name} is {type(a).__name__}, not a numpy array")
    if ndim is not None:
        if a.ndim != ndim:
            raise InvalidInputError(f"X ({x.format}): {name} has shape {a.shape}, not {ndim}-d")
        if a.dtype.kind not in "iu":
            raise InvalidInputError(f"X ({x.format}): {name} has dtype {a.dtype}, not an integer type")
    return a


def _indices(*arrays):
    """Checked index arrays of one type, int32 or int64 (scipy's index types, which its
    routines take alike): as they are when they already are, else all int64."""
    import numpy as np

    kinds = {a.dtype for a in arrays}
    if len(kinds) == 1 and kinds <= {np.dtype(np.int32), np.dtype(np.int64)}:
        return arrays
    return tuple(a.astype(np.int64) for a in arrays)


def _compressed(x, data, lines, length, line, across):
    """The checked ``(data, indices, indptr)`` of the compressed matrix ``x`` of ``lines`` rows
    (``line``: "row", or "column" for CSC) over ``length`` columns (``across``), with
    ``data``: ``lines + 1`` row pointers from 0, never decreasing, within the stored entries;
    as many indices as values; every index of the used entries within ``length``. The arrays
    are trimmed to the used entries (but for BSR, checked only) and the index arrays given one
    type (``_indices``)."""
    import numpy as np

    indptr = _part(x, "indptr", 1)
    indices = _part(x, "indices", 1)
    fmt = x.format
    if fmt != "bsr" and data.ndim != 1:
        raise InvalidInputError(f"X ({fmt}): data has shape {data.shape}, not 1-d")
    stored = data.shape[0] if data.ndim else 0
    if indptr.shape[0] != lines + 1:
        raise InvalidInputError(
            f"X ({fmt}): indptr has {indptr.shape[0]} entries for {lines} {line}s (it needs "
            f"{lines + 1}: one more than the {line}s)"
        )
    if indices.shape[0] != stored:
        raise InvalidInputError(
            f"X ({fmt}): indices has {indices.shape[0]} entries and data {stored}: one index per "
            "stored value"
        )
    if indptr[0] != 0:
        raise InvalidInputError(f"X ({fmt}): {line} 0: indptr[0] = {indptr[0]}, not 0")
    below = np.concatenate(([False], indptr[1:] < indptr[:-1]))
    bad = np.flatnonzero((indptr < 0) | (indptr > stored) | below)
    if bad.size:
        k = bad[0]
        v = indptr[k]
        if v < 0:
            why = "is negative"
        elif v > stored:
            why = f"exceeds the {stored} stored {'blocks' if fmt == 'bsr' else 'entries'}"
        else:
            why = f"is below indptr[{k - 1}] = {indptr[k - 1]} (row pointers never decrease)"
        raise InvalidInputError(f"X ({fmt}): {line} {k - 1}: indptr[{k}] = {v} {why}")
    used = int(indptr[-1])
    bad = np.flatnonzero((indices[:used] < 0) | (indices[:used] >= length))
    if bad.size:
        k = bad[0]
        at = int(np.searchsorted(indptr, k, side="right")) - 1
        raise InvalidInputError(
            f"X ({fmt}): {across[:-1]} index {indices[k]} at {line} {at}, outside the "
            f"{length} {across} (stored entry {k})"
        )
    if used < stored and fmt != "bsr":
        indices, data = indices[:used], data[:used]
    indices, indptr = _indices(indices, indptr)
    return data, indices, indptr


def _coordinates(x, data):
    """The COO matrix ``x`` checked: a 1-d ``data`` and, per axis, as many integer coordinates
    as values, each within the axis (the entry and its row named otherwise)."""
    import numpy as np

    if data.ndim != 1:
        raise InvalidInputError(f"X (coo): data has shape {data.shape}, not 1-d")
    coords = []
    for axis, (name, size) in enumerate(zip(("row", "col"), x.shape)):
        c = _part(x, name, 1)
        if c.shape[0] != data.shape[0]:
            raise InvalidInputError(
                f"X (coo): {name} has {c.shape[0]} entries and data {data.shape[0]}: one "
                "coordinate per stored value"
            )
        bad = np.flatnonzero((c < 0) | (c >= size))
        if bad.size:
            k = bad[0]
            where = "" if axis == 0 else f"row {coords[0][k]}: "
            what = "row" if axis == 0 else "column"
            raise InvalidInputError(
                f"X (coo): {where}entry {k}: {what} index {c[k]} is outside the {size} "
                f"{what}s"
            )
        coords.append(c)
    coords = _indices(*coords)
    if any(c is not old for c, old in zip(coords, (x.row, x.col))):
        x = type(x)((data, tuple(coords)), shape=x.shape, copy=False)
    return x


def _lil_lengths(x):
    """A LIL matrix's ``rows`` and ``data``: one list per row each, of equal lengths (scipy
    flattens them unchecked); the columns are checked after conversion."""
    import numpy as np

    n = x.shape[0]
    for name in ("rows", "data"):
        a = getattr(x, name, None)
        if not isinstance(a, np.ndarray) or a.shape != (n,):
            shape = getattr(a, "shape", type(a).__name__)
            raise InvalidInputError(f"X (lil): {name} has shape {shape}, not ({n},): one list per row")
    for i, (cols, vals) in enumerate(zip(x.rows, x.data)):
        if not isinstance(cols, list) or not isinstance(vals, list) or len(cols) != len(vals):
            raise InvalidInputError(
                f"X (lil): row {i}: rows[{i}] and data[{i}] must be lists of equal length"
            )


def _target(y, n):
    import numpy as np

    if y is None:
        raise InvalidInputError("this estimator requires y to be passed, but the target y is None")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        import warnings

        warnings.warn(
            "A column-vector y was passed when a 1d array was expected: it is raveled",
            _sklearn_class("DataConversionWarning", UserWarning),
            stacklevel=3,
        )
        y = y.ravel()
    if y.ndim != 1:
        raise InvalidInputError(f"y must be 1-dimensional, got shape {y.shape}")
    if y.shape[0] != n:
        raise InvalidInputError(
            f"Found input variables with inconsistent numbers of samples: X has {n} rows, y has {y.shape[0]}"
        )
    return y


class _DPLinearModel:
    """Shared protocol and fitting of the dpglm estimators."""

    _loss = None
    _regression = False

    # {name: default} of the constructor, in order (set by _install_init).
    _defaults = {}

    # -- scikit-learn's estimator protocol -------------------------------------------------

    @classmethod
    def _param_names(cls):
        return list(cls._defaults)

    def get_params(self, deep=True):
        """The constructor's parameters as given (``deep`` is accepted for scikit-learn)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Sets constructor parameters; an unknown name is a ``ValueError``."""
        names = self._param_names()
        for name, value in params.items():
            if name not in names:
                raise InvalidParameterError(
                    f"Invalid parameter {name!r} for estimator {type(self).__name__}; "
                    f"valid parameters are: {sorted(names)}"
                )
            setattr(self, name, value)
        return self

    def __repr__(self):
        shown = []
        for name, default in self._defaults.items():
            value = getattr(self, name)
            if value is default or (type(value) is type(default) and value == default):
                continue
            shown.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

    def __sklearn_is_fitted__(self):
        return hasattr(self, "_model")

    def __sklearn_tags__(self):
        from sklearn.utils import InputTags, Tags, TargetTags

        tags = Tags(
            estimator_type="regressor" if self._regression else "classifier",
            target_tags=TargetTags(required=True),
            input_tags=InputTags(allow_nan=False, sparse=True),
        )
        if self._regression:
            from sklearn.utils import RegressorTags

            tags.regressor_tags = RegressorTags()
        else:
            from sklearn.utils import ClassifierTags

            tags.classifier_tags = ClassifierTags(multi_class=False)
        # The noise makes fits differ unless random_state is an int.
        tags.non_deterministic = self.random_state is None
        return tags

    def __getstate__(self):
        state = self.__dict__.copy()
        if "_model" in state:
            state["_model"] = state["_model"].to_json()
        return state

    def __setstate__(self, state):
        state = dict(state)
        if "_model" in state:
            state["_model"] = _dpglm.Model.from_json(state["_model"])
        self.__dict__.update(state)

    # -- fitting ---------------------------------------------------------------------------

    def _check_fitted(self):
        if not hasattr(self, "_model"):
            raise _not_fitted(
                f"This {type(self).__name__} instance is not fitted yet: call 'fit' first"
            )

    def _learner_kwargs(self):
        own = _COMMON
        return {
            name: getattr(self, name)
            for name in self._param_names()
            if name not in own and getattr(self, name) is not None
        }

    def _labels(self, y):
        """Labels for the Rust learner, and ``classes_`` (regression: floats, ``None``)."""
        import numpy as np

        if self._regression:
            try:
                y = y.astype(np.float64)
            except (TypeError, ValueError) as e:
                raise InvalidInputError(f"y must be numeric for regression: {e}") from None
            bad = np.flatnonzero(~np.isfinite(y))
            if bad.size:
                raise InvalidInputError(f"Input y contains NaN or infinity: {y[bad[0]]} at row {bad[0]}")
            return y, None
        if self.classes is not None:
            classes = list(self.classes)
            if len(classes) != 2 or classes[0] == classes[1]:
                raise InvalidParameterError(
                    f"classes must be a pair (negative, positive) of distinct labels, not {self.classes!r}"
                )
        else:
            # {0, 1} or {-1, 1} as is. ``classes_`` is the fixed pair (0, 1) whatever the
            # data holds: choosing it by whether a -1 occurs would release a fact about the
            # rows (replace-one: all labels 1 vs one -1). -1 is read as the negative class.
            classes = [0, 1]
            minus = _is_minus_one(y)
            if minus.any():
                zero = np.flatnonzero(~minus & (y == 0))
                if zero.size:
                    raise InvalidInputError(
                        f"labels hold both 0 (row {zero[0]}) and -1 (row "
                        f"{np.flatnonzero(minus)[0]}) for the negative class (three classes?); "
                        "give the public class pair as classes=(negative, positive)"
                    )
                y = np.where(minus, 0, y)
        if y.dtype.kind in "fc":
            bad = np.flatnonzero(~np.isfinite(y))
            if bad.size:
                raise InvalidInputError(
                    f"Input y contains NaN or infinity: {y[bad[0]]} at row {bad[0]}"
                )
        is_pos = y == classes[1]
        is_neg = y == classes[0]
        bad = np.flatnonzero(~(is_pos | is_neg))
        if bad.size:
            value = y[bad[0]]
            value = value.item() if hasattr(value, "item") else value
            if self.classes is None:
                continuous = y.dtype.kind == "f" and value != round(value)
                kind = "Unknown label type: continuous. " if continuous else ""
                raise InvalidInputError(
                    f"{kind}label {value!r} at row {bad[0]} is not in {{0, 1}} or {{-1, 1}}. "
                    "Only binary classification is supported: give the public class pair as "
                    "classes=(negative, positive) (it is never read from the data)"
                )
            raise InvalidInputError(
                f"label {value!r} at row {bad[0]} is not in the class pair classes={tuple(classes)!r}"
            )
        signs = np.where(is_pos, 1.0, -1.0)
        return signs, np.asarray(classes)

    def fit(self, X, y):
        """Fits the private model on rows ``X`` and labels ``y``.

        Spends at most ``(epsilon, delta)`` in all (bounds and scaling estimates included);
        ``privacy_report_`` holds the privacy event tree and the plain-language statement;
        ``privacy_event_`` is that tree as a ``dpglm.accounting.ModelDpEvent``, which the
        accountants compose (with other models' trees: their joint price) and
        ``to_dp_accounting()`` converts for Google's ``dp_accounting``. ``epsilon``
        must be within 2^-20 to 2^20 (about 1e-6 to 1e6): the noise and its calibration are
        derived from it and are not computed beyond. DataFrame column names (the feature
        names) must be unique.

        ``X`` is a 2-d array, a DataFrame or a ``scipy.sparse`` matrix or array:

        - **float64** arrays are read in place (C or Fortran order); other numeric dtypes are
          converted to float64.
        - **float32** arrays are kept in float32 (never copied whole to float64) when the fit
          leaves the values as they are: no feature scaling (``scale="none"``, or ``"auto"``
          for regression), no unit-norm rows (``preprocess="none"``, or ``"auto"`` for
          regression) and a ``bias`` float32 holds exactly (e.g. 1.0). The model is then the
          one of the same values in float64, bit for bit (but for rows a learner projects onto
          its row bound, which are stored in float32 again, rounded toward zero). Otherwise
          the rows are widened to float64.
        - **sparse** rows (``csr_array``/``csr_matrix`` read as they are; CSC, COO and the
          other formats converted to CSR, a copy) are never densified when the learner has a
          sparse path (its entry in ``dpglm._dpglm.learners()`` has ``"sparse": True``:
          ``dp-gd``, ``dp-sgd`` (tuned too), ``noisy-gd``, ``objpert``, ``amp``,
          ``output-perturbation``, ``ssp``) and no feature scaling is asked.
          ``scale="auto"`` means no scaling for sparse rows (min-max would map zeros to
          non-zero values), as ``dpglm train`` on a LIBSVM file; the model equals the one
          fitted on ``X.toarray()`` with ``scale="none"``. With another learner, or a
          scaling (``scale="minmax"``/``"standard"``, ``feature_ranges``), the rows are
          densified and a ``UserWarning`` says why. Duplicate entries are summed (as
          ``toarray()`` does) and columns sorted, on a copy. The matrix's arrays are checked
          before anything reads them: a malformed structure (``indptr`` that does not start
          at 0, decreases or points past the stored entries; indices or coordinates outside
          the matrix; arrays of mismatched lengths or non-integer index types), a column
          outside the matrix or a NaN/infinite value is an ``InvalidInputError`` naming its
          row (and column). Scoring
          takes sparse rows too (densified a block of rows at a time for a model with a
          feature scaling).
        """
        import json

        import numpy as np

        x, names = _features(X, who=type(self).__name__)
        y = _target(y, x.shape[0])
        signs, classes = self._labels(y)
        seed = self.random_state
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise InvalidParameterError(
                f"random_state must be None (the secure generator) or a non-negative int "
                f"(a reproducible stream, not a private release), not {seed!r}"
            )
        if self.preprocess not in ("auto", "unit-norm", "none"):
            raise InvalidParameterError(
                f"preprocess must be one of auto|unit-norm|none, not {self.preprocess!r}"
            )
        unit_norm = {"auto": None, "unit-norm": True, "none": False}[self.preprocess]
        if self.budget is not None and not isinstance(self.budget, _dpglm.Budget):
            raise InvalidParameterError(
                f"budget must be None or a dpglm.Budget, not {type(self.budget).__name__}"
            )
        ranges = None
        if self.feature_ranges is not None:
            ranges = [(float(lo), float(hi)) for lo, hi in self.feature_ranges]
        algorithm = self.algorithm if self.algorithm is not None else self._default_algorithm
        model, statement, private, warnings = _dpglm.fit(
            x,
            np.ascontiguousarray(signs, dtype=np.float64),
            algorithm=algorithm,
            loss=self._loss,
            epsilon=_real("epsilon", self.epsilon),
            delta=_real("delta", self.delta),
            params=self._learner_kwargs(),
            scale=self.scale,
            feature_ranges=ranges,
            unit_norm=unit_norm,
            bias=None if not self.bias else _real("bias", self.bias),
            bounds_budget=None if self.bounds_budget is None else _real("bounds_budget", self.bounds_budget),
            random_state=None if seed is None else int(seed),
            feature_names=names,
            classes=None if classes is None else (str(classes[0]), str(classes[1])),
            budget=self.budget,
        )
        if warnings:
            import warnings as w

            for text in warnings:
                w.warn(text, UserWarning, stacklevel=2)
        for attr in ("feature_names_in_", "classes_"):
            self.__dict__.pop(attr, None)
        self._model = model
        if names is not None:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        self.n_features_in_ = x.shape[1]
        if classes is not None:
            self.classes_ = classes
        saved = json.loads(model.to_json())
        report = dict(saved["privacy"])
        report["statement"] = statement
        report["private_release"] = private
        report["warnings"] = list(warnings)
        self.privacy_report_ = report
        from dpglm.accounting import ModelDpEvent

        tree = {"neighbouring": saved["privacy"]["neighbouring"], "event": saved["privacy"]["event"]}
        self.privacy_event_ = ModelDpEvent(json.dumps(tree))
        self._set_coefficients()
        return self

    def _set_coefficients(self):
        """``coef_``/``intercept_``: the weights on the preprocessed features and the bias
        folded into the intercept (predictions apply the model's preprocessing)."""
        import numpy as np

        coef = np.asarray(self._model.coef)
        d = self.n_features_in_
        intercept = self._model.intercept
        if coef.shape[0] > d:
            intercept += float(self.bias) * float(coef[d])
        self.coef_ = coef[:d].reshape(1, d) if not self._regression else coef[:d]
        self.intercept_ = np.array([intercept]) if not self._regression else float(intercept)

    def _rows(self, X):
        self._check_fitted()
        names = getattr(self, "feature_names_in_", None)
        x, _ = _features(
            X,
            expected=self.n_features_in_,
            names=None if names is None else list(names),
            who=type(self).__name__,
        )
        return x

    def _decision(self, X):
        x = self._rows(X)
        return self._model.decision_function(x)


class LogisticRegression(_DPLinearModel):
    """Differentially private logistic regression (binary).

    ``algorithm`` is a name of the dpglm learner registry for the logistic loss (default
    ``"amp"``, approximate minima perturbation); any of its parameters may be given by keyword
    (``None``: the learner's default). ``classes=(negative, positive)`` gives the public class
    pair; without it labels must be in {0, 1} or {-1, 1} (-1 is read as 0) and ``classes_`` is
    always ``[0, 1]``: it is never chosen from the labels that occur. ``random_state=None`` draws the noise
    from the operating system's CSPRNG (a private release); an int gives a reproducible stream
    for experiments, which is *not* a private release. ``budget=dpglm.Budget(...)`` charges
    every fit to one budget shared by fits on the same rows: a fit it cannot pay for raises
    ``BudgetExceededError`` before it touches the data.
    """

    _loss = "logistic"
    _regression = False
    _default_algorithm = "amp"
    _estimator_type = "classifier"

    def decision_function(self, X):
        """The model's linear score ``⟨w, φ(x)⟩ + b`` of each row (φ: the fitted
        preprocessing); positive for ``classes_[1]``."""
        return self._decision(X)

    def predict(self, X):
        """The class of each row: ``classes_[1]`` where the score is positive."""
        import numpy as np

        scores = self.decision_function(X)
        return np.where(scores > 0, self.classes_[1], self.classes_[0])

    def predict_proba(self, X):
        """Probabilities of ``classes_[0]`` and ``classes_[1]``, shape (n, 2)."""
        import numpy as np

        x = self._rows(X)
        p = self._model.predict_proba(x)
        return np.column_stack([1.0 - p, p])

    def predict_log_proba(self, X):
        """Logarithms of ``predict_proba``."""
        import numpy as np

        return np.log(self.predict_proba(X))

    def score(self, X, y, sample_weight=None):
        """Accuracy on ``(X, y)``."""
        import numpy as np

        y = np.asarray(y)
        if self.classes is None:
            y = np.where(_is_minus_one(y), 0, y)
        hits = np.asarray(self.predict(X) == y, dtype=np.float64)
        return float(np.average(hits, weights=sample_weight))


def _real(name, value):
    """The parameter ``name`` as a float, or the error naming it."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"`{name}` must be a real number, not {value!r}") from None


def _is_minus_one(y):
    """Where ``y`` is the label -1 (numbers only: text labels are never -1)."""
    import numpy as np

    y = np.asarray(y)
    if y.dtype.kind not in "iuf":
        return np.zeros(y.shape, dtype=bool)
    return y == -1


class LinearRegression(_DPLinearModel):
    """Differentially private linear regression (squared loss).

    ``algorithm`` is a name of the dpglm learner registry (default ``"ssp"``, AdaSSP); any of
    its parameters may be given by keyword (``None``: the learner's default). The feature and
    label bounds are public values when given (``x_bound``, ``y_bound``) and otherwise
    estimated privately within ``bounds_budget`` of ``epsilon``. ``random_state`` as in
    :class:`LogisticRegression`.
    """

    _loss = "squared"
    _regression = True
    _default_algorithm = "ssp"
    _estimator_type = "regressor"

    def predict(self, X):
        """The predicted value ``⟨w, φ(x)⟩ + b`` of each row (φ: the fitted preprocessing)."""
        return self._decision(X)

    def score(self, X, y, sample_weight=None):
        """The coefficient of determination R² on ``(X, y)``."""
        import numpy as np

        y = np.asarray(y, dtype=np.float64)
        pred = self.predict(X)
        w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        ss_res = float(np.sum(w * (y - pred) ** 2))
        mean = float(np.average(y, weights=w))
        ss_tot = float(np.sum(w * (y - mean) ** 2))
        return 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res == 0 else 0.0)


def _install_init(cls):
    """The constructor: every parameter an explicit keyword with its default (scikit-learn
    reads them with ``inspect.signature``), the learners' keyword-only, stored as given."""
    own = dict(_COMMON)
    own["algorithm"] = cls._default_algorithm
    if cls._regression:
        del own["classes"]
    defaults = dict(own)
    defaults.update((n, None) for n in _learner_params(cls._regression) if n not in own)
    positional = ", ".join(f"{n}={v!r}" for n, v in own.items())
    keyword = ", ".join(f"{n}=None" for n in defaults if n not in own)
    body = "".join(f"    self.{n} = {n}\n" for n in defaults)
    source = f"def __init__(self, {positional}, *, {keyword}):\n{body}"
    namespace = {}
    exec(compile(source, f"<dpglm {cls.__name__}.__init__>", "exec"), namespace)
    init = namespace["__init__"]
    init.__doc__ = cls.__doc__
    init.__qualname__ = f"{cls.__name__}.__init__"
    init.__module__ = cls.__module__
    cls.__init__ = init
    cls._defaults = defaults


_install_init(LogisticRegression)
_install_init(LinearRegression)
