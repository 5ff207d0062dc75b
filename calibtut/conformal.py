"""Split conformal prediction and the finite-sample law of its coverage.

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

import numpy as np
from scipy import stats

from ._validation import (
    as_float_array,
    check_alpha,
    check_int,
    check_positive,
    check_same_length,
)

__all__ = [
    "conformal_rank",
    "conformal_quantile",
    "split_conformal_interval",
    "SplitConformalRegressor",
    "coverage_distribution",
    "coverage_count_distribution",
    "coverage_band",
]

# (n + 1) * level is rounded to this many decimals before taking the ceiling,
# so that a product that is an integer on paper (n = 19, level = 0.95) is not
# pushed to the next integer by floating-point error.
_RANK_DECIMALS = 9


def _ceil_rank(x):
    """``ceil(x)`` after rounding to ``_RANK_DECIMALS`` decimals, at least 1 (vectorised)."""
    return np.maximum(np.ceil(np.round(x, _RANK_DECIMALS)), 1).astype(np.int64)


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
    return int(_ceil_rank((n + 1) * level))


def conformal_quantile(scores, alpha):
    """Split conformal threshold: the ``ceil((n+1)(1-alpha))``-th smallest score.

    Parameters
    ----------
    scores : array_like of shape (n,)
        Conformity scores of the calibration points (larger = less conforming).
    alpha : float
        Miscoverage level in (0, 1).

    Returns
    -------
    float
        The threshold ``q``; a new point is covered when its score is ``<= q``.
        It is ``inf`` when ``ceil((n + 1)(1 - alpha)) > n``, i.e. when
        ``alpha < 1 / (n + 1)``: no finite threshold then guarantees coverage
        ``1 - alpha``, and the prediction set is the whole line.

    Examples
    --------
    >>> conformal_quantile([0.3, 0.1, 0.2, 0.4], alpha=0.4)
    0.3
    >>> conformal_quantile([0.3, 0.1, 0.2, 0.4], alpha=0.1)
    inf
    """
    scores = as_float_array(scores, "scores", ndim=1)
    alpha = check_alpha(alpha)
    n = scores.size
    k = conformal_rank(n, 1 - alpha)
    if k > n:
        return math.inf
    return float(np.partition(scores, k - 1)[k - 1])


def _check_scale(scale, name, n):
    if scale is None:
        return None
    scale = check_positive(scale, name, ndim=1)
    if scale.size != n:
        raise ValueError(f"{name} must have one entry per prediction ({n}), got {scale.size}")
    return scale


def split_conformal_interval(cal_pred, cal_y, test_pred, alpha, *, cal_scale=None, test_scale=None):
    """Split conformal interval from absolute residuals of any point predictor.

    The conformity score is ``|y - y_hat|`` (or ``|y - y_hat| / scale`` when
    scales are given: normalized conformal regression), its conformal
    threshold ``q`` is computed on the calibration set and the interval is
    ``y_hat -/+ q`` (times ``scale``).

    Parameters
    ----------
    cal_pred, cal_y : array_like of shape (n_cal,)
        Point predictions and labels of the calibration set.
    test_pred : array_like of shape (n_test,)
        Point predictions at the test inputs.
    alpha : float
        Miscoverage level in (0, 1).
    cal_scale, test_scale : array_like, optional
        Positive difficulty estimates (e.g. predicted standard deviations);
        give both or neither.

    Returns
    -------
    lower, upper : numpy.ndarray of shape (n_test,)
        Interval bounds; infinite when ``alpha < 1 / (n_cal + 1)``.

    Examples
    --------
    >>> lo, hi = split_conformal_interval([0.0, 0.0, 0.0, 0.0], [1.0, -2.0, 3.0, 0.5],
    ...                                   [10.0], alpha=0.4)
    >>> float(lo[0]), float(hi[0])
    (8.0, 12.0)
    """
    model = SplitConformalRegressor(alpha=alpha).fit(cal_pred, cal_y, cal_scale=cal_scale)
    return model.predict_interval(test_pred, test_scale=test_scale)


class SplitConformalRegressor:
    """Split conformal intervals over a point predictor's predictions.

    Numpy in, numpy out: the model itself is never called; pass its
    predictions on the calibration set (with the labels) to :meth:`fit`, and
    its predictions at test inputs to :meth:`predict_interval`.

    Parameters
    ----------
    alpha : float, default 0.1
        Miscoverage level in (0, 1); the intervals have marginal coverage
        ``ceil((n+1)(1-alpha)) / (n+1) >= 1 - alpha`` on exchangeable data.

    Attributes
    ----------
    quantile_ : float
        Conformal threshold of the (possibly normalized) absolute residuals.
    n_cal_ : int
        Number of calibration points.
    normalized_ : bool
        Whether scales were used.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y_cal = rng.normal(size=999)
    >>> model = SplitConformalRegressor(alpha=0.1).fit(np.zeros(999), y_cal)
    >>> round(model.quantile_, 2)
    1.56
    >>> lo, hi = model.predict_interval(np.array([0.0, 5.0]))
    >>> np.round(hi - lo, 2)
    array([3.11, 3.11])
    """

    def __init__(self, alpha=0.1):
        self.alpha = check_alpha(alpha)

    def fit(self, cal_pred, cal_y, *, cal_scale=None):
        """Compute the conformal threshold from calibration residuals.

        Parameters
        ----------
        cal_pred, cal_y : array_like of shape (n_cal,)
            Predictions and labels on the calibration set.
        cal_scale : array_like of shape (n_cal,), optional
            Positive scales dividing the residuals.

        Returns
        -------
        SplitConformalRegressor
            ``self``.
        """
        alpha = check_alpha(self.alpha)
        cal_pred = as_float_array(cal_pred, "cal_pred", ndim=1)
        cal_y = as_float_array(cal_y, "cal_y", ndim=1)
        n = check_same_length(cal_pred=cal_pred, cal_y=cal_y)
        scale = _check_scale(cal_scale, "cal_scale", n)
        scores = np.abs(cal_y - cal_pred)
        if scale is not None:
            scores = scores / scale
        self.quantile_ = conformal_quantile(scores, alpha)
        self.n_cal_ = n
        self.normalized_ = scale is not None
        return self

    def predict_interval(self, test_pred, *, test_scale=None):
        """Intervals ``test_pred -/+ quantile_`` (times ``test_scale``).

        Parameters
        ----------
        test_pred : array_like of shape (n_test,)
            Point predictions at the test inputs.
        test_scale : array_like of shape (n_test,), optional
            Required exactly when ``fit`` received ``cal_scale``.

        Returns
        -------
        lower, upper : numpy.ndarray of shape (n_test,)
        """
        if not hasattr(self, "quantile_"):
            raise ValueError("this SplitConformalRegressor is not fitted: call fit first")
        test_pred = as_float_array(test_pred, "test_pred", ndim=1)
        scale = _check_scale(test_scale, "test_scale", test_pred.size)
        if self.normalized_ and scale is None:
            raise ValueError("test_scale is required: the model was fitted with cal_scale")
        if not self.normalized_ and scale is not None:
            raise ValueError("test_scale was given but the model was fitted without cal_scale")
        width = np.full(test_pred.shape, self.quantile_) if scale is None else self.quantile_ * scale
        return test_pred - width, test_pred + width


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
