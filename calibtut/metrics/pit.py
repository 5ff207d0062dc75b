"""Probability integral transform (PIT) of observations under predictive distributions.

The PIT of an observation y under a predictive CDF F is F(y); a model is
probabilistically calibrated when its PITs are uniform on [0, 1] ([2], eq. 1).

References
----------
- [2] Dheur & Ben Taieb, "A Large-Scale Study of Probabilistic Calibration in
  Neural Network Regression", ICML 2023 (paper 002).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from calibtut._validation import (
    as_float_array,
    check_levels,
    check_positive,
    check_probabilities,
    check_real,
    check_same_length,
)

__all__ = [
    "check_gaussian",
    "check_mixture",
    "check_quantiles",
    "pit_gaussian",
    "pit_mixture",
    "pit_quantile",
]

_TAILS = ("linear", "pad")


def check_gaussian(y, mean, std):
    """Validate a Gaussian prediction ``(mean, std)`` for targets ``y``.

    Parameters
    ----------
    y, mean, std : array_like, shape (n,)
        Targets, predicted means and standard deviations (finite, ``std > 0``).

    Returns
    -------
    y, mean, std : numpy.ndarray, shape (n,)

    Examples
    --------
    >>> [a.tolist() for a in check_gaussian([1.0], [0.0], [2.0])]
    [[1.0], [0.0], [2.0]]
    """
    y = as_float_array(y, "y", ndim=1)
    mean = as_float_array(mean, "mean", ndim=1)
    std = check_positive(std, "std", ndim=1)
    check_same_length(y=y, mean=mean, std=std)
    return y, mean, std


def check_mixture(y, weights, means, stds):
    """Validate a Gaussian mixture ``(weights, means, stds)``, each (n, n_components).

    Parameters
    ----------
    y : array_like, shape (n,)
    weights, means, stds : array_like, shape (n, n_components)
        Component weights (rows summing to 1), means and standard deviations (> 0).

    Returns
    -------
    y : numpy.ndarray, shape (n,)
    weights, means, stds : numpy.ndarray, shape (n, n_components)

    Examples
    --------
    >>> y, w, m, s = check_mixture([0.0], [[0.5, 0.5]], [[-1.0, 1.0]], [[1.0, 1.0]])
    >>> w.shape
    (1, 2)
    """
    y = as_float_array(y, "y", ndim=1)
    weights = check_probabilities(weights, "weights", ndim=2, simplex_axis=1)
    means = as_float_array(means, "means", ndim=2)
    stds = check_positive(stds, "stds", ndim=2)
    if not weights.shape == means.shape == stds.shape:
        raise ValueError(
            f"weights, means and stds must have the same shape, got {weights.shape}, {means.shape}, {stds.shape}"
        )
    check_same_length(y=y, weights=weights)
    return y, weights, means, stds


def check_quantiles(y, quantiles, levels, *, monotone=True):
    """Validate quantile predictions ``(n, n_levels)`` at ``levels`` for targets ``y``.

    Quantiles must be non-decreasing along each row (sort crossing quantiles
    first), unless ``monotone=False``.

    Returns
    -------
    y : numpy.ndarray, shape (n,)
    quantiles : numpy.ndarray, shape (n, n_levels)
    levels : numpy.ndarray, shape (n_levels,)

    Examples
    --------
    >>> _, q, a = check_quantiles([0.0], [[-1.0, 1.0]], [0.25, 0.75])
    >>> q.shape, a.tolist()
    ((1, 2), [0.25, 0.75])
    """
    y = as_float_array(y, "y", ndim=1)
    quantiles = as_float_array(quantiles, "quantiles", ndim=2)
    levels = check_levels(levels)
    if quantiles.shape[1] != levels.size:
        raise ValueError(f"quantiles has {quantiles.shape[1]} columns but levels has {levels.size} entries")
    if not isinstance(monotone, (bool, np.bool_)):
        raise TypeError(f"monotone must be True or False, got {type(monotone).__name__}")
    if monotone and np.any(np.diff(quantiles, axis=1) < 0):
        raise ValueError("quantiles must be non-decreasing along each row (sort crossing quantiles)")
    check_same_length(y=y, quantiles=quantiles)
    return y, quantiles, levels


def pit_gaussian(y, mean, std):
    r"""PIT under Gaussian predictions: :math:`\Phi((y - \mu) / \sigma)`.

    Parameters
    ----------
    y, mean, std : array_like, shape (n,)
        Targets, predictive means and (positive) standard deviations.

    Returns
    -------
    numpy.ndarray, shape (n,)

    Examples
    --------
    >>> pit_gaussian([0.0, 1.0], [0.0, 0.0], [1.0, 1.0]).round(4).tolist()
    [0.5, 0.8413]
    """
    y, mean, std = check_gaussian(y, mean, std)
    return special.ndtr((y - mean) / std)


def pit_mixture(y, weights, means, stds):
    r"""PIT under Gaussian mixtures: :math:`\sum_k w_k \Phi((y - \mu_k) / \sigma_k)`.

    Parameters
    ----------
    y : array_like, shape (n,)
    weights, means, stds : array_like, shape (n, n_components)
        Component weights (rows sum to 1), means and standard deviations.

    Returns
    -------
    numpy.ndarray, shape (n,)

    Examples
    --------
    >>> # .3 Phi(1) + .7 Phi(-1) = .3 * .8413 + .7 * .1587
    >>> pit_mixture([0.0], [[0.3, 0.7]], [[-1.0, 1.0]], [[1.0, 1.0]]).round(4).tolist()
    [0.3635]
    """
    y, weights, means, stds = check_mixture(y, weights, means, stds)
    cdf = np.sum(weights * special.ndtr((y[:, None] - means) / stds), axis=1)
    return np.clip(cdf, 0.0, 1.0)


def pit_quantile(y, quantiles, levels, tails="linear", pad=0.1):
    r"""PIT under quantile predictions, by piecewise-linear interpolation of the CDF.

    The predictive CDF passes through the points :math:`(q_{ij}, \alpha_j)` and
    is linear between them. Outside :math:`[q_{i1}, q_{iK}]` it is completed by

    * ``tails="linear"``: the outermost segments are extended with their own
      slope and the result clipped to [0, 1];
    * ``tails="pad"``: the points :math:`(q_{i1} - \mathrm{pad}\cdot r_i, 0)`
      and :math:`(q_{iK} + \mathrm{pad}\cdot r_i, 1)` are added, where
      :math:`r_i = q_{iK} - q_{i1}` is the row's range, and the CDF is 0 or 1
      beyond them.

    Tied quantiles make the CDF jump: an observation on the tie gets the upper
    level.

    Parameters
    ----------
    y : array_like, shape (n,)
    quantiles : array_like, shape (n, n_levels)
        Non-decreasing along each row; at least 2 levels.
    levels : array_like, shape (n_levels,)
        Strictly increasing in (0, 1).
    tails : {"linear", "pad"}
    pad : float, default 0.1
        Tail width as a fraction of each row's range (``tails="pad"`` only;
        rows must then have a positive range).

    Returns
    -------
    numpy.ndarray, shape (n,)
        Values in [0, 1].

    Examples
    --------
    >>> q = [[0.0, 1.0, 2.0]] * 3
    >>> # y = 0.5 lies halfway between the .1 and .5 quantiles -> 0.3;
    >>> # y = 3 extends the last segment (slope .4 per unit) -> .9 + .4 = 1.3, clipped to 1
    >>> pit_quantile([0.5, 2.0, 3.0], q, [0.1, 0.5, 0.9]).round(3).tolist()
    [0.3, 0.9, 1.0]
    """
    y, quantiles, levels = check_quantiles(y, quantiles, levels)
    if levels.size < 2:
        raise ValueError("levels must hold at least 2 levels to interpolate a CDF")
    if tails not in _TAILS:
        raise ValueError(f"tails must be one of {_TAILS}, got {tails!r}")
    pad = check_real(pad, "pad", low=0, low_open=True)
    n = y.size
    lev = np.broadcast_to(levels, quantiles.shape)
    if tails == "pad":
        width = quantiles[:, -1] - quantiles[:, 0]
        if np.any(width <= 0):
            raise ValueError("quantiles must have a positive range in every row when tails='pad'")
        quantiles = np.column_stack([quantiles[:, 0] - pad * width, quantiles, quantiles[:, -1] + pad * width])
        lev = np.column_stack([np.zeros(n), lev, np.ones(n)])
    k = quantiles.shape[1]
    above = np.sum(quantiles <= y[:, None], axis=1)
    seg = np.clip(above - 1, 0, k - 2)
    rows = np.arange(n)
    q_lo, q_hi = quantiles[rows, seg], quantiles[rows, seg + 1]
    a_lo, a_hi = lev[rows, seg], lev[rows, seg + 1]
    dq = q_hi - q_lo
    flat = dq <= 0
    slope = np.where(flat, 0.0, (a_hi - a_lo) / np.where(flat, 1.0, dq))
    cdf = np.where(flat, np.where(y >= q_hi, a_hi, a_lo), a_lo + slope * (y - q_lo))
    return np.clip(cdf, 0.0, 1.0)
