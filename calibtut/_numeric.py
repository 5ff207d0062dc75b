"""Shared numerical internals, used by several subpackages.

* The conformal rank ``ceil((n + 1) * level)`` and its rounding guard, used by
  split conformal prediction, the quantile-recalibration maps and ADMIT.
* :func:`reduce_scores` and :func:`gaussian_abs_mean`, shared by the closed-form
  scores of :mod:`calibtut.metrics.scores` and the marginal KDE model.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from calibtut._validation import check_alpha, check_int

__all__ = ["RANK_DECIMALS", "ceil_rank", "conformal_rank", "gaussian_abs_mean", "reduce_scores"]

# (n + 1) * level is rounded to this many decimals before taking the ceiling,
# so that a product that is an integer on paper (n = 19, level = 0.95) is not
# pushed to the next integer by floating-point error.
RANK_DECIMALS = 9


def ceil_rank(x):
    """``ceil(x)`` after rounding to ``RANK_DECIMALS`` decimals, at least 1 (vectorised)."""
    return np.maximum(np.ceil(np.round(x, RANK_DECIMALS)), 1).astype(np.int64)


def conformal_rank(n, level):
    """Rank ``ceil((n + 1) * level)`` of the split conformal order statistic.

    Parameters
    ----------
    n : int
        Number of calibration scores (at least 1).
    level : float
        Target coverage in (0, 1), i.e. ``1 - alpha`` for a two-sided set or
        the quantile level for a one-sided bound.

    Returns
    -------
    int
        The rank ``k`` in ``1, ..., n + 1``; ``k = n + 1`` means that the
        threshold is infinite (too few calibration points for this level).

    Notes
    -----
    ``(n + 1) * level`` is rounded to 9 decimals before the ceiling, so that
    products that are integers in exact arithmetic stay integers; the rank is
    at least 1.

    Examples
    --------
    >>> conformal_rank(19, 0.9)
    18
    >>> conformal_rank(5, 0.95)
    6
    """
    n = check_int(n, "n", minimum=1)
    level = check_alpha(level, "level")
    return int(ceil_rank((n + 1) * level))


def reduce_scores(values, reduction):
    """The mean of per-point scores (``"mean"``) or the scores themselves (``"none"``).

    Examples
    --------
    >>> reduce_scores(np.array([1.0, 3.0]), "mean")
    2.0
    """
    if reduction == "mean":
        return float(np.mean(values))
    if reduction == "none":
        return values
    raise ValueError(f"reduction must be 'mean' or 'none', got {reduction!r}")


def gaussian_abs_mean(m, s):
    """E|X| for X ~ N(m, s^2): m (2 Phi(m/s) - 1) + 2 s phi(m/s), the CRPS mixture term.

    Examples
    --------
    >>> round(float(gaussian_abs_mean(0.0, 1.0)), 6)  # sqrt(2 / pi)
    0.797885
    """
    z = m / s
    return m * (2 * special.ndtr(z) - 1) + 2 * s * np.exp(-0.5 * z**2 - 0.5 * np.log(2 * np.pi))
