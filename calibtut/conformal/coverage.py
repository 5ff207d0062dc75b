"""The finite-sample law of split conformal coverage: its Beta and beta-binomial distributions and bands.

Split (inductive) conformal prediction turns any conformity score computed on
a held-out calibration set into a threshold with a distribution-free coverage
guarantee. With ``n`` exchangeable calibration scores and no ties, the
threshold is the ``k``-th smallest score with ``k = ceil((n + 1)(1 - alpha))``
and a new score falls below it with probability exactly ``k / (n + 1)``.

Conditionally on the calibration set, the coverage of the resulting sets is a
random variable with the law ``Beta(k, n + 1 - k)`` (Vovk 2012; Angelopoulos &
Bates 2021 write it ``Beta(n + 1 - l, l)`` with ``l = floor((n + 1) alpha)``);
the empirical coverage on ``n_test`` fresh points is then beta-binomial. The
functions :func:`coverage_distribution`, :func:`coverage_count_distribution`
and :func:`coverage_band` expose these laws so that simulations and notebooks
can check coverage against an honest band instead of a guessed tolerance.
"""

from __future__ import annotations

import math

from scipy import stats

from calibtut._numeric import conformal_rank
from calibtut._validation import (
    check_alpha,
    check_int,
)

__all__ = ["coverage_distribution", "coverage_count_distribution", "coverage_band"]

def _coverage_shape(n_cal, alpha):
    n_cal = check_int(n_cal, "n_cal", minimum=1)
    alpha = check_alpha(alpha)
    k = conformal_rank(n_cal, 1 - alpha)
    if k > n_cal:
        raise ValueError(
            f"n_cal={n_cal} is too small for alpha={alpha}: the conformal threshold is infinite "
            f"and the coverage is 1 (need n_cal >= {math.ceil(1 / alpha) - 1})"
        )
    return n_cal, k


def coverage_distribution(n_cal, alpha):
    """Law of the coverage of a split conformal set, given its calibration set.

    With ``n_cal`` continuous exchangeable scores and
    ``k = ceil((n_cal + 1)(1 - alpha))``, the probability that a new point is
    covered, conditionally on the calibration data, follows
    ``Beta(k, n_cal + 1 - k)``, i.e. ``Beta(n + 1 - l, l)`` with
    ``l = floor((n + 1) alpha)`` (Vovk 2012). Its mean is ``k / (n_cal + 1)``.
    The same law holds for a one-sided conformal bound at quantile level
    ``a`` with ``alpha = 1 - a``.

    Parameters
    ----------
    n_cal : int
        Calibration set size.
    alpha : float
        Miscoverage level in (0, 1), with ``alpha >= 1 / (n_cal + 1)``.

    Returns
    -------
    scipy.stats.rv_continuous frozen
        The frozen Beta distribution.

    Raises
    ------
    ValueError
        When ``alpha < 1 / (n_cal + 1)`` (infinite threshold, coverage 1).

    Examples
    --------
    >>> dist = coverage_distribution(999, 0.1)
    >>> round(float(dist.mean()), 3)
    0.9
    >>> [round(float(x), 3) for x in dist.interval(0.9)]
    [0.884, 0.915]
    """
    n_cal, k = _coverage_shape(n_cal, alpha)
    return stats.beta(k, n_cal + 1 - k)


def coverage_count_distribution(n_cal, alpha, n_test):
    """Law of the number of covered points among ``n_test`` fresh test points.

    Mixing the binomial count over the :func:`coverage_distribution` of the
    calibration draw gives ``BetaBinomial(n_test, k, n_cal + 1 - k)``.

    Parameters
    ----------
    n_cal : int
        Calibration set size.
    alpha : float
        Miscoverage level in (0, 1).
    n_test : int
        Number of test points per calibration draw.

    Returns
    -------
    scipy.stats.rv_discrete frozen
        The frozen beta-binomial distribution of the covered count.

    Examples
    --------
    >>> dist = coverage_count_distribution(19, 0.1, n_test=100)
    >>> round(float(dist.mean()), 1)
    90.0
    """
    n_cal, k = _coverage_shape(n_cal, alpha)
    n_test = check_int(n_test, "n_test", minimum=1)
    return stats.betabinom(n_test, k, n_cal + 1 - k)


def coverage_band(n_cal, alpha, n_test, level=0.9):
    """Central band of the empirical coverage on ``n_test`` test points.

    The empirical coverage of one split conformal run (one calibration draw,
    ``n_test`` fresh points) lies in ``[lower, upper]`` with probability at
    least ``level`` under exchangeability (equal tails of the beta-binomial
    law of :func:`coverage_count_distribution`).

    Parameters
    ----------
    n_cal : int
        Calibration set size.
    alpha : float
        Miscoverage level in (0, 1).
    n_test : int
        Number of test points used to measure coverage.
    level : float, default 0.9
        Probability content of the band, in (0, 1).

    Returns
    -------
    lower, upper : float
        Band for the empirical coverage (a fraction in [0, 1]).

    Examples
    --------
    >>> lo, hi = coverage_band(1000, 0.1, n_test=1000, level=0.9)
    >>> round(lo, 3), round(hi, 3)
    (0.877, 0.921)
    """
    level = check_alpha(level, "level")
    dist = coverage_count_distribution(n_cal, alpha, n_test)
    tail = (1 - level) / 2
    lower = dist.ppf(tail)
    upper = dist.ppf(1 - tail)
    return float(lower) / n_test, float(upper) / n_test
