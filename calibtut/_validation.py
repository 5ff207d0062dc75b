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
    if finite and not np.all(np.isfinite(arr)):
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
    if np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(f"{name} must lie in [0, 1]")
    if simplex_axis is not None:
        sums = arr.sum(axis=simplex_axis)
        if not np.allclose(sums, 1.0, atol=atol, rtol=0):
            worst = float(np.max(np.abs(sums - 1)))
            raise ValueError(f"{name} must sum to 1 along axis {simplex_axis} (largest deviation {worst:.3g})")
    return arr


def check_levels(levels, name="levels", *, open_interval=True):
    """Check quantile levels: 1-d, strictly increasing, inside (0, 1).

    Examples
    --------
    >>> check_levels([0.1, 0.5, 0.9])
    array([0.1, 0.5, 0.9])
    """
    arr = as_float_array(levels, name, ndim=1)
    if open_interval and (np.any(arr <= 0) or np.any(arr >= 1)):
        raise ValueError(f"{name} must lie strictly inside (0, 1)")
    if not open_interval and (np.any(arr < 0) or np.any(arr > 1)):
        raise ValueError(f"{name} must lie in [0, 1]")
    if np.any(np.diff(arr) <= 0):
        raise ValueError(f"{name} must be strictly increasing")
    return arr


def check_positive(x, name, *, strict=True, **kwargs):
    """Check that every entry of ``x`` is positive (or non-negative).

    Examples
    --------
    >>> check_positive([0.5, 2.0], "std")
    array([0.5, 2. ])
    """
    arr = as_float_array(x, name, **kwargs)
    shown = f", got {arr.item()}" if arr.ndim == 0 else ""
    if strict and np.any(arr <= 0):
        raise ValueError(f"{name} must be strictly positive{shown}")
    if not strict and np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative{shown}")
    return arr


def check_alpha(alpha, name="alpha"):
    """Check a miscoverage level in (0, 1) and return it as a float.

    Examples
    --------
    >>> check_alpha(0.1)
    0.1
    """
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_shown(alpha)} ({type(alpha).__name__})")
    alpha = float(alpha)
    if not 0 < alpha < 1:
        raise ValueError(f"{name} must lie in (0, 1), got {alpha}")
    return alpha


def check_int(value, name, *, minimum=None, maximum=None):
    """Check an integer argument (bools rejected) and optional bounds.

    Examples
    --------
    >>> check_int(10, "n_bins", minimum=1)
    10
    """
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
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        if isinstance(value, np.ndarray) and value.ndim == 0 and np.issubdtype(value.dtype, np.number) \
                and not np.issubdtype(value.dtype, np.bool_) and not np.iscomplexobj(value):
            value = value.item()
        else:
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


def check_rng(seed):
    """Return a ``numpy.random.Generator`` from a seed, a Generator or None.

    Examples
    --------
    >>> int(check_rng(0).integers(10)) == int(check_rng(0).integers(10))
    True
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool)):
        if seed is not None and seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed}")
        return np.random.default_rng(seed)
    raise TypeError(f"seed must be None, an int or a numpy Generator, got {_shown(seed)} ({type(seed).__name__})")
