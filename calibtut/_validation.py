"""Argument checks shared by every module.

Each helper returns a clean numpy array (or value) and raises a ``ValueError``
or ``TypeError`` whose message names the offending argument, so that bad input
never turns into a wrong number further down.
"""

from __future__ import annotations

import math
import numbers
import reprlib

import numpy as np


def _shown(value):
    """A short repr of a rejected value for an error message."""
    return reprlib.repr(value)


def _dtype_kind(x):
    """The numpy dtype kind of ``x`` as an array, or None when numpy cannot build one (ragged input)."""
    try:
        return np.asarray(x).dtype.kind
    except (TypeError, ValueError):  # ragged input: the float conversion reports it
        return None


def _refuse_non_real(x, name):
    """Refuse complex numbers and strings, which numpy would silently cast or parse."""
    if isinstance(x, complex):
        raise TypeError(f"{name} must be a real number, got complex {x!r}")
    if not (hasattr(x, "__array__") or isinstance(x, (list, tuple))):
        return
    kind = _dtype_kind(x)
    if kind == "c":
        raise TypeError(f"{name} must hold real numbers, got complex values")
    if kind is not None and kind in "USV":
        raise TypeError(f"{name} must hold numbers, got strings ({np.asarray(x).dtype})")
    if kind == "O":
        bad = next((v for v in np.asarray(x).ravel() if isinstance(v, (str, bytes, complex))), None)
        if bad is not None:
            raise TypeError(f"{name} must hold real numbers, got {_shown(bad)} ({type(bad).__name__})")


def _scalar(value):
    """A 0-d numpy array of real numbers as the Python number it holds; anything else unchanged."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        return value.item()
    return value


def _all_finite(arr):
    """Whether every entry is finite: one sum (no temporary array) decides, unless it overflows."""
    return bool(np.isfinite(np.sum(arr))) or bool(np.all(np.isfinite(arr)))


def _first_bad(arr, bad):
    """The first offending entry of ``arr`` (where ``bad`` is True), for an error message."""
    return float(arr[bad].flat[0])


def as_float_array(x, name, *, ndim=None, min_ndim=None, allow_empty=False, finite=True):
    """Convert ``x`` to a float64 array and check its shape and values.

    Parameters
    ----------
    x : array_like
        The value to check.
    name : str
        The argument's name, used in error messages.
    ndim : int or tuple of int, optional
        Required number(s) of dimensions.
    min_ndim : int, optional
        Minimal number of dimensions.
    allow_empty : bool, default False
        Whether an array with no elements is acceptable.
    finite : bool, default True
        Reject NaN and infinite entries.

    Returns
    -------
    numpy.ndarray
        ``x`` as a float64 array.

    Examples
    --------
    >>> as_float_array([1, 2], "y")
    array([1., 2.])
    """
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be array-like of numbers, got {type(x).__name__}")
    _refuse_non_real(x, name)
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be array-like of numbers ({exc})") from None
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            raise ValueError(f"{name} must have {' or '.join(map(str, allowed))} dimension(s), got shape {arr.shape}")
    if min_ndim is not None and arr.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got shape {arr.shape}")
    if not allow_empty and arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if finite and not _all_finite(arr):
        if arr.ndim == 0:
            raise ValueError(f"{name} must be finite, got {arr.item()}")
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def check_probabilities(p, name, *, simplex_axis=None, atol=1e-6, **kwargs):
    """Check that ``p`` holds probabilities in [0, 1].

    Parameters
    ----------
    p : array_like
        Probabilities.
    name : str
        The argument's name, used in error messages.
    simplex_axis : int, optional
        If given, rows along this axis must also sum to one (within ``atol``).
    atol : float, default 1e-6
        Tolerance for the sum-to-one check.
    **kwargs
        Passed to :func:`as_float_array`.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> check_probabilities([[0.2, 0.8]], "probs", simplex_axis=1)
    array([[0.2, 0.8]])
    """
    arr = as_float_array(p, name, **kwargs)
    if arr.size and not (arr.min() >= 0 and arr.max() <= 1):  # two reductions, then the exact check
        outside = (arr < 0) | (arr > 1)
        if np.any(outside):
            raise ValueError(f"{name} must lie in [0, 1], got {_first_bad(arr, outside)}")
    if simplex_axis is not None:
        sums = arr.sum(axis=simplex_axis)
        if not np.allclose(sums, 1.0, atol=atol, rtol=0):
            worst = float(np.max(np.abs(sums - 1)))
            raise ValueError(f"{name} must sum to 1 along axis {simplex_axis} (largest deviation {worst:.3g})")
    return arr


def check_class_probs(probs, name, *, min_classes=2, n=None):
    """Check class probabilities: shape ``(n, n_classes)``, rows in [0, 1] summing to 1.

    Parameters
    ----------
    probs : array_like, shape (n, n_classes)
    name : str
        The argument's name, used in error messages.
    min_classes : int, default 2
    n : int, optional
        Required number of rows.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> check_class_probs([[0.3, 0.7]], "probs")
    array([[0.3, 0.7]])
    >>> check_class_probs([[0.3, 0.3]], "probs")
    Traceback (most recent call last):
    ...
    ValueError: probs must sum to 1 along axis 1 (largest deviation 0.4)
    """
    arr = check_probabilities(probs, name, simplex_axis=1, ndim=2)
    if arr.shape[1] < min_classes:
        raise ValueError(f"{name} must have at least {min_classes} columns, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} must have {n} rows, got {arr.shape[0]}")
    return arr


def check_logits(logits, name):
    """Classifier logits as a float array of shape ``(n, n_classes)``, at least two columns.

    Examples
    --------
    >>> check_logits([[0.0, 1.5]], "cal_logits").shape
    (1, 2)
    >>> check_logits([[1.5]], "cal_logits")
    Traceback (most recent call last):
    ...
    ValueError: cal_logits must have at least 2 columns (n, n_classes), got shape (1, 1); for one binary logit z pass numpy.column_stack([0 * z, z])
    """
    logits = as_float_array(logits, name, ndim=2)
    if logits.shape[1] < 2:
        raise ValueError(
            f"{name} must have at least 2 columns (n, n_classes), got shape {logits.shape}; "
            "for one binary logit z pass numpy.column_stack([0 * z, z])"
        )
    return logits


def check_n_classes(arr, name, n_classes):
    """Refuse an ``(n, k)`` array of class scores whose ``k`` is not the ``n_classes`` seen at fit.

    Parameters
    ----------
    arr : numpy.ndarray of shape (n, k)
        Checked class probabilities, logits or scores.
    name : str
        The argument's name, used in the error message.
    n_classes : int
        The number of classes of the calibration set.

    Returns
    -------
    numpy.ndarray
        ``arr``.

    Examples
    --------
    >>> check_n_classes(np.zeros((4, 3)), "test_probs", 2)
    Traceback (most recent call last):
    ...
    ValueError: test_probs has 3 classes, the calibration set has 2
    """
    if arr.shape[1] != n_classes:
        raise ValueError(f"{name} has {arr.shape[1]} classes, the calibration set has {n_classes}")
    return arr


def check_labels(labels, name, *, n_classes=None, n=None):
    """Check class labels: 1-d integers in ``0 .. n_classes - 1``.

    Integral floats (``1.0``) are accepted and returned as integers; ``0.5``,
    booleans, strings and negative values are refused.

    Parameters
    ----------
    labels : array_like, shape (n,)
    name : str
        The argument's name, used in error messages.
    n_classes : int, optional
        Number of classes; without it, any non-negative integer is accepted.
    n : int, optional
        Required length.

    Returns
    -------
    numpy.ndarray of int64

    Examples
    --------
    >>> check_labels([0, 2, 1.0], "labels", n_classes=3)
    array([0, 2, 1])
    >>> check_labels([0, 3], "labels", n_classes=3)
    Traceback (most recent call last):
    ...
    ValueError: labels must be integers in 0..2, got 3.0
    """
    if _dtype_kind(labels) == "b":
        raise TypeError(f"{name} must hold integer class labels, got booleans")
    arr = as_float_array(labels, name, ndim=1)
    high = np.inf if n_classes is None else n_classes
    bad = (arr != np.round(arr)) | (arr < 0) | (arr >= high)
    if np.any(bad):
        span = "non-negative integers" if n_classes is None else f"integers in 0..{n_classes - 1}"
        raise ValueError(f"{name} must be {span}, got {float(arr[bad][0])!r}")
    if n is not None and arr.size != n:
        raise ValueError(f"{name} must have one entry per point ({n}), got {arr.size}")
    return arr.astype(np.int64)


def check_weights(weights, name, *, n=None):
    """Check sample weights: 1-d, finite, non-negative, not all zero.

    Examples
    --------
    >>> check_weights([1.0, 0.0, 2.5], "cal_weight")
    array([1. , 0. , 2.5])
    """
    arr = as_float_array(weights, name, ndim=1)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative, got {_first_bad(arr, arr < 0)}")
    if n is not None and arr.size != n:
        raise ValueError(f"{name} must have one entry per point ({n}), got {arr.size}")
    if not np.any(arr > 0):
        raise ValueError(f"{name} must not be all zero")
    return arr


def check_distances(distances, name, *, ndim=None):
    """Check distances: finite and non-negative.

    Examples
    --------
    >>> check_distances([0.0, 1.5], "d")
    array([0. , 1.5])
    """
    arr = as_float_array(distances, name, ndim=ndim)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative, got {_first_bad(arr, arr < 0)}")
    return arr


def check_categories(categories, name, *, n=None):
    """Check Mondrian categories: a 1-d array of integer codes, one per point.

    Examples
    --------
    >>> check_categories([0, 1, 1], "categories")
    array([0, 1, 1])
    """
    return check_labels(categories, name, n=n)


def check_levels(levels, name="levels", *, open_interval=True):
    """Check quantile levels: 1-d, strictly increasing, inside (0, 1).

    Examples
    --------
    >>> check_levels([0.1, 0.5, 0.9])
    array([0.1, 0.5, 0.9])
    """
    arr = as_float_array(levels, name, ndim=1)
    if open_interval and (np.any(arr <= 0) or np.any(arr >= 1)):
        raise ValueError(f"{name} must lie strictly inside (0, 1), got {_shown(arr.tolist())}")
    if not open_interval and (np.any(arr < 0) or np.any(arr > 1)):
        raise ValueError(f"{name} must lie in [0, 1], got {_shown(arr.tolist())}")
    if np.any(np.diff(arr) <= 0):
        raise ValueError(f"{name} must be strictly increasing, got {_shown(arr.tolist())}")
    return arr


def check_positive(x, name, *, strict=True, **kwargs):
    """Check that every entry of ``x`` is positive (or non-negative).

    Examples
    --------
    >>> check_positive([0.5, 2.0], "std")
    array([0.5, 2. ])
    """
    arr = as_float_array(x, name, **kwargs)
    bad = arr <= 0 if strict else arr < 0
    if np.any(bad):
        kind = "strictly positive" if strict else "non-negative"
        raise ValueError(f"{name} must be {kind}, got {_first_bad(arr, bad)}")
    return arr


def check_alpha(alpha, name="alpha"):
    """Check a miscoverage level in (0, 1) and return it as a float.

    Examples
    --------
    >>> check_alpha(0.1)
    0.1
    """
    alpha = _scalar(alpha)
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_shown(alpha)} ({type(alpha).__name__})")
    alpha = float(alpha)
    if not 0 < alpha < 1:
        raise ValueError(f"{name} must lie in (0, 1), got {alpha}")
    return alpha


def check_choice(value, name, choices):
    """``value`` when it is one of ``choices``; else a ``ValueError`` naming the argument and the choices.

    Examples
    --------
    >>> check_choice("right", "closed", ("right", "left"))
    'right'
    >>> check_choice("both", "closed", ("right", "left"))
    Traceback (most recent call last):
    ...
    ValueError: closed must be one of ('right', 'left'), got 'both'
    """
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_choices(values, name, choices):
    """``values`` as a tuple when it is a non-empty selection of ``choices`` (one string is one choice).

    Examples
    --------
    >>> check_choices(["ece", "pinball"], "metrics", ("pinball", "ece", "sharpness"))
    ('ece', 'pinball')
    >>> check_choices("ece", "metrics", ("pinball", "ece"))
    ('ece',)
    >>> check_choices(["ece", "nll"], "metrics", ("pinball", "ece"))
    Traceback (most recent call last):
    ...
    ValueError: metrics must be a non-empty selection of ('pinball', 'ece'), got ('ece', 'nll')
    """
    values = (values,) if isinstance(values, str) else tuple(values)
    if not values or any(v not in choices for v in values):
        raise ValueError(f"{name} must be a non-empty selection of {tuple(choices)}, got {values!r}")
    return values


def check_bool(value, name):
    """``value`` as a Python bool when it is a bool (numpy's included); else a ``TypeError``.

    Examples
    --------
    >>> check_bool(True, "randomized")
    True
    >>> check_bool(1, "randomized")
    Traceback (most recent call last):
    ...
    TypeError: randomized must be a bool, got 1
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {_shown(value)}")
    return bool(value)


def check_callable(value, name, *, signature):
    """``value`` when it is callable; else a ``TypeError`` naming the argument and the call it must take.

    Examples
    --------
    >>> check_callable(len, "kernel", signature="kernel(a, b)") is len
    True
    >>> check_callable(2.0, "kernel", signature="kernel(a, b)")
    Traceback (most recent call last):
    ...
    TypeError: kernel must be a function kernel(a, b), got float
    """
    if not callable(value):
        raise TypeError(f"{name} must be a function {signature}, got {type(value).__name__}")
    return value


def check_int(value, name, *, minimum=None, maximum=None):
    """Check an integer argument (bools rejected) and optional bounds.

    Examples
    --------
    >>> check_int(10, "n_bins", minimum=1)
    10
    """
    value = _scalar(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {_shown(value)} ({type(value).__name__})")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_real(value, name, *, low=None, high=None, low_open=False, high_open=False, allow_inf=False):
    """Check a real scalar argument (bools rejected): finite and inside a range.

    Parameters
    ----------
    value : object
        The value to check.
    name : str
        The argument's name, used in error messages.
    low, high : float, optional
        Bounds of the accepted range (None: unbounded on that side).
    low_open, high_open : bool, default False
        Exclude the bound itself (``value > low`` instead of ``>=``).
    allow_inf : bool, default False
        Accept ``inf`` and ``-inf`` (still subject to the bounds); NaN is
        always rejected.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If it is NaN, infinite (unless allowed) or outside the range; the
        message names the argument and the value.

    Examples
    --------
    >>> check_real(0.5, "eps", low=0)
    0.5
    >>> check_real(float("nan"), "eps", low=0)
    Traceback (most recent call last):
    ...
    ValueError: eps must be a finite real number, got nan
    >>> check_real(0.0, "tau", low=0, low_open=True)
    Traceback (most recent call last):
    ...
    ValueError: tau must be > 0, got 0.0
    """
    value = _scalar(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_shown(value)} ({type(value).__name__})")
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise ValueError(f"{name} must be a {'' if allow_inf else 'finite '}real number, got {value}")
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {value}")
    if high is not None and (value > high or (high_open and value == high)):
        raise ValueError(f"{name} must be {'<' if high_open else '<='} {high}, got {value}")
    return value


def check_distribution(dist, name):
    """Check a frozen scipy distribution: it has ``cdf`` and ``ppf`` and finite parameters.

    The shape parameters, ``loc`` and ``scale`` (``dist.args`` and
    ``dist.kwds``, scalars or arrays) must all be finite, so that a NaN or an
    infinity is reported here rather than as NaN forecasts later.

    Examples
    --------
    >>> from scipy import stats
    >>> check_distribution(stats.norm(0.0, [1.0, 2.0]), "forecasts").mean().tolist()
    [0.0, 0.0]
    >>> check_distribution(stats.norm(0.0, [1.0, float("inf")]), "forecasts")
    Traceback (most recent call last):
    ...
    ValueError: forecasts has a NaN or infinite parameter (scale): [1.0, inf]
    """
    if not (callable(getattr(dist, "cdf", None)) and callable(getattr(dist, "ppf", None))):
        raise TypeError(f"{name} must be a frozen scipy distribution, got {type(dist).__name__}")
    named = dict(zip(_shape_names(dist), getattr(dist, "args", ())))
    named.update(getattr(dist, "kwds", {}))
    for key, value in named.items():
        arr = np.asarray(value)
        if arr.dtype.kind in "fiuc" and not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} has a NaN or infinite parameter ({key}): {arr.tolist()}")
    return dist


def _shape_names(dist):
    """Names of the positional parameters of a frozen scipy distribution."""
    family = getattr(dist, "dist", None)
    shapes = getattr(family, "shapes", None)
    names = [s.strip() for s in shapes.split(",")] if shapes else []
    return names + ["loc", "scale"]


def check_same_length(**arrays):
    """Check that every array has the same first dimension.

    Examples
    --------
    >>> import numpy as np
    >>> check_same_length(y=np.zeros(3), mean=np.ones(3))
    3
    """
    lengths = {name: len(a) for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{k} has {v}" for k, v in lengths.items())
        raise ValueError(f"arguments must have the same length: {detail}")
    return next(iter(lengths.values()))


def check_frame(df, name, columns=(), *, allow_empty=True):
    """Return ``df`` if it is a DataFrame holding ``columns`` (and rows, unless ``allow_empty``).

    Parameters
    ----------
    df : object
        The argument checked.
    name : str
        The argument's name, used in the error messages.
    columns : sequence of str, optional
        The columns ``df`` must have.
    allow_empty : bool, default True
        When False, a frame without rows is refused.

    Returns
    -------
    pandas.DataFrame
        ``df`` itself.

    Examples
    --------
    >>> import pandas as pd
    >>> check_frame(pd.DataFrame({"ece": [1.0]}), "runs", ["ece"]).shape
    (1, 1)
    >>> check_frame(pd.DataFrame({"ece": [1.0]}), "runs", ["ece", "oce"])
    Traceback (most recent call last):
    ...
    ValueError: runs lacks column(s) ['oce']; it has ['ece']
    """
    import pandas as pd  # here, not at the top: the numpy families do not load pandas

    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(df).__name__}")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{name} lacks column(s) {missing}; it has {list(df.columns)}")
    if not allow_empty and len(df) == 0:
        raise ValueError(f"{name} must have at least one row")
    return df


def check_rng(seed):
    """Return a ``numpy.random.Generator`` from a seed, a Generator or None.

    Examples
    --------
    >>> int(check_rng(0).integers(10)) == int(check_rng(0).integers(10))
    True
    """
    if isinstance(seed, np.random.Generator):
        return seed
    seed = _scalar(seed)
    if seed is None or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool)):
        if seed is not None and seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed}")
        return np.random.default_rng(seed)
    raise TypeError(f"seed must be None, an int or a numpy Generator, got {_shown(seed)} ({type(seed).__name__})")


def check_fitted(estimator, attribute):
    """Check that ``estimator`` was fitted: it has the fitted attribute ``attribute``.

    Parameters
    ----------
    estimator : object
        An estimator of the contract (fitted attributes end in ``_``).
    attribute : str
        An attribute that :meth:`fit` always sets.

    Returns
    -------
    object
        ``estimator``.

    Raises
    ------
    RuntimeError
        When the attribute is missing: a method was called before ``fit``.

    Examples
    --------
    >>> class Model:
    ...     pass
    >>> model = Model()
    >>> check_fitted(model, "threshold_")
    Traceback (most recent call last):
    ...
    RuntimeError: this Model is not fitted: call fit first
    >>> model.threshold_ = 0.5
    >>> check_fitted(model, "threshold_") is model
    True
    """
    if not hasattr(estimator, attribute):
        raise RuntimeError(f"this {type(estimator).__name__} is not fitted: call fit first")
    return estimator


def check_quantile_function(quantile_function, levels, name="quantile_function"):
    """Evaluate a base quantile function at ``levels`` and check its output.

    A quantile function maps levels of shape ``(m,)`` (in [0, 1], possibly
    ``inf``) to quantiles of shape ``(n, m)``, one row per prediction, as
    :func:`calibtut.recalibration.gaussian_quantile_function` returns.

    Parameters
    ----------
    quantile_function : callable
        The base quantile function.
    levels : array_like of shape (m,)
        Levels at which to evaluate it (already checked by the caller).
    name : str, default "quantile_function"
        The argument's name, used in error messages.

    Returns
    -------
    numpy.ndarray of shape (n, m)
        The quantiles, as float64 (infinite values allowed).

    Examples
    --------
    >>> check_quantile_function(lambda u: 2 * u[None, :], [0.25, 0.5])
    array([[0.5, 1. ]])
    >>> check_quantile_function(lambda u: u, [0.25, 0.5])
    Traceback (most recent call last):
    ...
    ValueError: quantile_function must return an array of shape (n, 2), got (2,)
    """
    if not callable(quantile_function):
        raise TypeError(f"{name} must be callable (levels (m,) -> quantiles (n, m)), "
                        f"got {type(quantile_function).__name__}")
    levels = np.asarray(levels, dtype=np.float64)
    quantiles = as_float_array(quantile_function(levels), name, allow_empty=True, finite=False)
    if quantiles.ndim != 2 or quantiles.shape[1] != levels.size:
        raise ValueError(f"{name} must return an array of shape (n, {levels.size}), got {quantiles.shape}")
    return quantiles
