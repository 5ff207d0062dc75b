"""Argument checks shared by every module.

Each helper returns a clean numpy array (or value) and raises a ``ValueError``
or ``TypeError`` whose message names the offending argument, so that bad input
never turns into a wrong number further down.
"""

from __future__ import annotations

import numbers

import numpy as np


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
    if strict and np.any(arr <= 0):
        raise ValueError(f"{name} must be strictly positive")
    if not strict and np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative")
    return arr


def check_alpha(alpha, name="alpha"):
    """Check a miscoverage level in (0, 1) and return it as a float.

    Examples
    --------
    >>> check_alpha(0.1)
    0.1
    """
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(alpha).__name__}")
    alpha = float(alpha)
    if not 0 < alpha < 1:
        raise ValueError(f"{name} must lie in (0, 1), got {alpha}")
    return alpha


def check_int(value, name, *, minimum=None):
    """Check an integer argument (bools rejected) and an optional lower bound.

    Examples
    --------
    >>> check_int(10, "n_bins", minimum=1)
    10
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


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
        return np.random.default_rng(seed)
    raise TypeError(f"seed must be None, an int or a numpy Generator, got {type(seed).__name__}")
