"""The drift paper's metrics, batched over series, and its calibration bounds.

:mod:`calibtut.metrics` holds the single-series definitions
(:func:`~calibtut.metrics.quantile_calibration_error` is ``L_ece``,
:func:`~calibtut.metrics.pinball_loss`, :func:`~calibtut.metrics.quantile_sharpness`).
They reject crossing quantiles, while the paper scores its basic algorithm
and the baselines, which can cross, level by level. The functions here take
the same ``(y, quantiles, levels)`` with labels ``y`` of shape ``(..., T)`` and
quantiles of shape ``(..., T, K)`` (any leading batch shape), accept crossings
and return one value per series; on non-crossing input they equal the single-series
functions (checked in the tests). The rest is specific to the paper: the
oracle band ``alpha_k +- b_delta(T)`` of the reliability diagrams, the tuning
loss ``L_mix`` of Eq. (43) and the bound of Theorem 1.
"""

from __future__ import annotations

import numpy as np

from calibtut._validation import as_float_array, check_int, check_real
from calibtut.online._forecasts import check_bound, check_online_levels
from calibtut.online.conformal import _check_delta, binomial_tolerance

__all__ = [
    "ece_loss",
    "empirical_frequencies",
    "mixed_loss",
    "oracle_band",
    "pinball_loss",
    "reliability_data",
    "sharpness",
    "theorem1_bound",
]


def _check(y, quantiles, levels):
    y = as_float_array(y, "y", min_ndim=1)
    q = as_float_array(quantiles, "quantiles", min_ndim=2)
    a = check_online_levels(levels)
    if q.shape[-1] != len(a):
        raise ValueError(f"quantiles must have {len(a)} entries on the last axis (one per level), got shape {q.shape}")
    if q.shape[:-1] != y.shape:
        raise ValueError(f"y must have shape {q.shape[:-1]} (quantiles without the level axis), got {y.shape}")
    return y, q, a


def empirical_frequencies(y, quantiles, levels):
    """``F_k^T / T``: fraction of labels at or below each quantile, per series.

    Parameters
    ----------
    y : array_like of shape (..., T)
        Labels.
    quantiles : array_like of shape (..., T, K)
    levels : array_like of shape (K,)

    Returns
    -------
    ndarray of shape (..., K)

    Examples
    --------
    >>> empirical_frequencies([0.0, 2.0], [[1.0, 3.0], [1.0, 3.0]], [0.25, 0.75]).tolist()
    [0.5, 1.0]
    """
    y, q, _ = _check(y, quantiles, levels)
    return np.mean(y[..., None] <= q, axis=-2)


def ece_loss(y, quantiles, levels):
    """The paper's calibration loss ``L_ece = 1/K sum_k |F_k^T / T - alpha_k|``, per series.

    Examples
    --------
    >>> float(ece_loss([0.0, 2.0], [[1.0, 3.0], [1.0, 3.0]], [0.25, 0.75]))
    0.25
    """
    y, q, a = _check(y, quantiles, levels)
    return np.mean(np.abs(np.mean(y[..., None] <= q, axis=-2) - a), axis=-1)


def pinball_loss(y, quantiles, levels):
    """Average pinball loss ``1/(T K) sum_t sum_k rho_{alpha_k}(Y_t - Z_k^t)``, per series.

    Examples
    --------
    >>> float(pinball_loss([1.0], [[0.0, 3.0]], [0.1, 0.9]).round(3))
    0.15
    """
    y, q, a = _check(y, quantiles, levels)
    diff = y[..., None] - q
    return np.mean(np.maximum(a * diff, (a - 1) * diff), axis=(-2, -1))


def sharpness(quantiles):
    """Sharpness ``1/K sum_k |Z_k - Z_{K+1-k}|`` averaged over time, per series.

    Examples
    --------
    >>> float(sharpness([[0.0, 1.0, 3.0, 4.0]]))
    3.0
    """
    q = as_float_array(quantiles, "quantiles", min_ndim=2)
    return np.mean(np.abs(q - q[..., ::-1]), axis=(-2, -1))


def mixed_loss(y, quantiles, levels, w_mix=0.4):
    """The tuning objective of Eq. (43): ``w_mix L_ece + (1 - w_mix) L_pinball``, per series.

    Examples
    --------
    >>> float(mixed_loss([0.0, 2.0], [[1.0, 3.0], [1.0, 3.0]], [0.25, 0.75], w_mix=1.0))
    0.25
    """
    w = float(w_mix)
    if not 0 <= w <= 1:
        raise ValueError(f"w_mix must lie in [0, 1], got {w}")
    return w * ece_loss(y, quantiles, levels) + (1 - w) * pinball_loss(y, quantiles, levels)


def oracle_band(n_steps, levels, delta=0.01):
    """The oracle's reliability band ``alpha_k +- b_delta(T)`` (paper, Figure 4).

    Parameters
    ----------
    n_steps : int
        ``T``.
    levels : array_like of shape (K,)
    delta : float, default 0.01

    Returns
    -------
    lower, upper : ndarray of shape (K,)

    Examples
    --------
    >>> lo, hi = oracle_band(100, [0.5], delta=0.05)
    >>> lo.round(2).tolist(), hi.round(2).tolist()
    ([0.4], [0.6])
    """
    T = check_int(n_steps, "n_steps", minimum=1)
    a = check_online_levels(levels)
    b = binomial_tolerance(T, a, _check_delta(delta))[T] / T
    return a - b, a + b


def reliability_data(y, quantiles, levels, delta=0.01):
    """Reliability-diagram data with the oracle band.

    Parameters
    ----------
    y : array_like of shape (..., T)
        Labels.
    quantiles : array_like of shape (..., T, K)
    levels : array_like of shape (K,)
    delta : float, default 0.01

    Returns
    -------
    dict
        ``levels`` (K,), ``frequency`` (..., K) = ``F_k^T / T``, ``lower`` and
        ``upper`` (K,) of the oracle band, and ``inside`` (...) telling
        whether every level of a series lies within the band.

    Examples
    --------
    >>> d = reliability_data([0.0, 2.0], [[1.0, 3.0], [1.0, 3.0]], [0.25, 0.75], delta=0.05)
    >>> d["frequency"].tolist(), bool(d["inside"])
    ([0.5, 1.0], True)
    """
    y, q, a = _check(y, quantiles, levels)
    freq = np.mean(y[..., None] <= q, axis=-2)
    lower, upper = oracle_band(y.shape[-1], a, delta)
    inside = np.all((freq >= lower - 1e-12) & (freq <= upper + 1e-12), axis=-1)
    return {"levels": a, "frequency": freq, "lower": lower, "upper": upper, "inside": inside}


def theorem1_bound(n_steps, levels, *, B, beta, delta, kind="half"):
    """Theorem 1's bound on ``|F_k^t - alpha_k t|`` (in counts) for t = 0..n_steps.

    The proof (Appendix A) shows ``|F_k^t - alpha_k t| <= b_delta(t) t +
    log(1 + 2B) / beta + 1`` at every ``t`` for the basic algorithm of Eq. (3)
    fed with initial predictions in ``[-B, B]``; dividing by ``t`` gives the
    theorem's ``b(T)``.

    Parameters
    ----------
    n_steps : int
    levels : array_like of shape (K,)
    B : float
        Label bound (required).
    beta : float
        Growth rate of the exponential adjustment, > 0 and finite: with
        ``beta = inf`` the ``log(1 + 2B) / beta`` term would vanish and the
        bound would be too tight.
    delta : float
        Miscoverage of the binomial tolerance, in (0, 1).
    kind : {"half", "full"}, default "half"

    Returns
    -------
    ndarray of shape (n_steps + 1, K)

    Examples
    --------
    >>> float(theorem1_bound(10, [0.5], B=1.0, beta=1.0, delta=0.5)[0, 0].round(3))
    2.099
    """
    B = check_bound(B)
    if B is None:
        raise ValueError("B is required: Theorem 1 assumes labels in [-B, B]")
    beta = check_real(beta, "beta", low=0, low_open=True)
    return binomial_tolerance(n_steps, levels, _check_delta(delta), kind) + np.log1p(2 * B) / beta + 1
