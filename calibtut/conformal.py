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
    check_real,
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


# Weighted split conformal prediction under covariate shift (Tibshirani, Barber, Candes & Ramdas 2019).
#
# With calibration scores s_1..s_n, their weights w_i = w(x_i) (a density ratio q/p, known or
# estimated) and a test point of weight w(x), the threshold is the (1 - alpha) quantile of
# sum_i p_i(x) delta_{s_i} + p_{n+1}(x) delta_{+inf}, p_i(x) = w_i / (sum_j w_j + w(x)),
# p_{n+1}(x) = w(x) / (sum_j w_j + w(x)). The test point's own mass sits at +inf: dropping it
# (normalising the calibration weights alone) is the classic bug and loses the guarantee.

__all__ += [
    "weighted_conformal_quantile",
    "lac_scores",
    "aps_scores",
    "weighted_conformal_sets",
    "weighted_conformal_interval",
]

# relative slack in the comparison cumulative weight >= (1 - alpha) * total, so that equal weights
# reproduce conformal_rank exactly when (n + 1)(1 - alpha) is an integer on paper
_WEIGHT_RTOL = 1e-12


def _check_weights(weights, name, n=None):
    weights = as_float_array(weights, name, ndim=1)
    if np.any(weights < 0):
        raise ValueError(f"{name} must be non-negative, got {weights[weights < 0][0]!r}")
    if n is not None and weights.size != n:
        raise ValueError(f"{name} must have one entry per point ({n}), got {weights.size}")
    return weights


def weighted_conformal_quantile(cal_scores, cal_weights, test_weights, alpha):
    """Weighted conformal thresholds, one per test point, with the test point's mass at ``+inf``.

    For a test point of weight ``w`` the threshold is the smallest calibration
    score ``s_(k)`` (in increasing order) whose cumulative weight reaches
    ``(1 - alpha) * (W + w)``, ``W`` the total calibration weight; it is
    ``inf`` when even all calibration weight falls short, i.e. when
    ``W < (1 - alpha)(W + w)``. With equal weights it is
    :func:`conformal_quantile`. Vectorised: one sort and one
    :func:`numpy.searchsorted` for all test points.

    Parameters
    ----------
    cal_scores : array_like of shape (n,)
        Calibration conformity scores (larger = less conforming).
    cal_weights : array_like of shape (n,)
        Non-negative weights ``w(x_i)`` of the calibration points (only ratios
        matter: ``w`` and ``c w`` give the same thresholds).
    test_weights : float or array_like of shape (m,)
        Non-negative, finite weights ``w(x)`` of the test points, on the same scale.
    alpha : float
        Miscoverage level in (0, 1).

    Returns
    -------
    numpy.ndarray of shape (m,)
        Thresholds; a candidate is in the set when its score is ``<=`` the threshold.

    Examples
    --------
    >>> weighted_conformal_quantile([0.3, 0.1, 0.2, 0.4], [1, 1, 1, 1], [1.0], alpha=0.4)
    array([0.3])
    >>> weighted_conformal_quantile([0.3, 0.1, 0.2, 0.4], [1, 1, 1, 3], [0.5, 8.0], alpha=0.4)
    array([0.4, inf])
    """
    scores = as_float_array(cal_scores, "cal_scores", ndim=1)
    weights = _check_weights(cal_weights, "cal_weights", scores.size)
    if not isinstance(test_weights, (str, bytes)) and np.ndim(test_weights) == 0:
        test_weights = [check_real(test_weights, "test_weights", low=0)]
    test = _check_weights(test_weights, "test_weights")
    alpha = check_alpha(alpha)
    order = np.argsort(scores, kind="stable")
    sorted_scores = scores[order]
    cumulative = np.cumsum(weights[order])
    total = cumulative[-1] + test
    if np.any(total <= 0):
        raise ValueError("cal_weights and test_weights are all zero for some test point: no distribution to take")
    target = (1 - alpha) * total * (1 - _WEIGHT_RTOL)
    k = np.searchsorted(cumulative, target, side="left")
    padded = np.append(sorted_scores, np.inf)
    return padded[k]


def _check_class_probs(probs, name):
    probs = as_float_array(probs, name, ndim=2)
    if probs.shape[1] < 2:
        raise ValueError(f"{name} must have at least 2 columns (n, n_classes), got shape {probs.shape}")
    if np.any(probs < 0) or np.any(probs > 1):
        raise ValueError(f"{name} must lie in [0, 1]")
    return probs


def _check_class_labels(labels, n, n_classes, name):
    labels_f = as_float_array(labels, name, ndim=1)
    if labels_f.size != n:
        raise ValueError(f"{name} must have one entry per row ({n}), got {labels_f.size}")
    if np.any(labels_f != np.round(labels_f)) or np.any(labels_f < 0) or np.any(labels_f >= n_classes):
        raise ValueError(f"{name} must be integers in [0, {n_classes - 1}]")
    return labels_f.astype(np.int64)


def lac_scores(probs, labels=None):
    """LAC scores ``1 - p_y`` (least ambiguous set-valued classifier; Sadinle et al. 2019).

    Parameters
    ----------
    probs : array_like of shape (n, n_classes)
        Predicted class probabilities.
    labels : array_like of int, shape (n,), optional
        When given, the score of each row's label; otherwise every class's score.

    Returns
    -------
    numpy.ndarray of shape (n,) or (n, n_classes)

    Examples
    --------
    >>> lac_scores([[0.7, 0.2, 0.1]], [1])
    array([0.8])
    """
    probs = _check_class_probs(probs, "probs")
    scores = 1.0 - probs
    if labels is None:
        return scores
    labels = _check_class_labels(labels, len(probs), probs.shape[1], "labels")
    return scores[np.arange(len(probs)), labels]


def aps_scores(probs, labels=None):
    """APS scores: the probability mass of the classes ranked at or above a class (Romano et al. 2020).

    The non-randomised adaptive prediction set score: sort the classes by
    decreasing probability and sum the probabilities down to the class itself
    (ties broken by class index).

    Parameters
    ----------
    probs : array_like of shape (n, n_classes)
    labels : array_like of int, shape (n,), optional

    Returns
    -------
    numpy.ndarray of shape (n,) or (n, n_classes)

    Examples
    --------
    >>> aps_scores([[0.2, 0.7, 0.1]])
    array([[0.9, 0.7, 1. ]])
    """
    probs = _check_class_probs(probs, "probs")
    order = np.argsort(-probs, axis=1, kind="stable")
    cumulative = np.cumsum(np.take_along_axis(probs, order, axis=1), axis=1)
    scores = np.empty_like(probs)
    np.put_along_axis(scores, order, cumulative, axis=1)
    if labels is None:
        return scores
    labels = _check_class_labels(labels, len(probs), probs.shape[1], "labels")
    return scores[np.arange(len(probs)), labels]


_CLASS_SCORES = {"lac": lac_scores, "aps": aps_scores}


def weighted_conformal_sets(cal_probs, cal_labels, cal_weights, test_probs, test_weights, alpha, *, score="lac"):
    """Weighted split conformal prediction sets for a classifier under covariate shift.

    The calibration scores of the true labels and their weights give, for
    every test point, the threshold of :func:`weighted_conformal_quantile`;
    a class is in the set when its score is at most that threshold. With
    weights ``w = q/p`` (the target-to-source density ratio) the sets cover
    the label of a target point with probability at least ``1 - alpha``
    (Tibshirani et al. 2019, Corollary 1); equal weights give split conformal sets.

    Parameters
    ----------
    cal_probs : array_like of shape (n, n_classes)
    cal_labels : array_like of int, shape (n,)
    cal_weights : array_like of shape (n,)
        Non-negative density-ratio weights of the calibration points.
    test_probs : array_like of shape (m, n_classes)
    test_weights : array_like of shape (m,)
        Weights of the test points, on the same scale.
    alpha : float
        Miscoverage level in (0, 1).
    score : {"lac", "aps"}, default "lac"

    Returns
    -------
    numpy.ndarray of bool, shape (m, n_classes)
        ``sets[j, k]`` is True when class ``k`` is in the set of test point ``j``.

    Examples
    --------
    >>> cal = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]]
    >>> weighted_conformal_sets(cal, [0, 0, 1, 1], [1, 1, 1, 1], [[0.75, 0.25]], [1.0], 0.4)
    array([[ True, False]])
    """
    if score not in _CLASS_SCORES:
        raise ValueError(f"score must be one of {tuple(_CLASS_SCORES)}, got {score!r}")
    cal_probs = _check_class_probs(cal_probs, "cal_probs")
    test_probs = _check_class_probs(test_probs, "test_probs")
    if test_probs.shape[1] != cal_probs.shape[1]:
        raise ValueError(f"test_probs has {test_probs.shape[1]} classes, cal_probs has {cal_probs.shape[1]}")
    test_weights = _check_weights(test_weights, "test_weights", len(test_probs))
    scores = _CLASS_SCORES[score](cal_probs, cal_labels)
    threshold = weighted_conformal_quantile(scores, cal_weights, test_weights, alpha)
    return _CLASS_SCORES[score](test_probs) <= threshold[:, None]


def weighted_conformal_interval(
    cal_pred, cal_y, cal_weights, test_pred, test_weights, alpha, *, cal_scale=None, test_scale=None
):
    """Weighted split conformal intervals from absolute residuals, under covariate shift.

    The score is ``|y - y_hat|`` (divided by ``scale`` when scales are
    given); each test point gets its own threshold ``q(x)`` from
    :func:`weighted_conformal_quantile` and the interval ``y_hat -/+ q(x)``
    (times its scale). Infinite bounds mean the weighted calibration mass
    cannot reach ``1 - alpha`` for that point.

    Parameters
    ----------
    cal_pred, cal_y : array_like of shape (n,)
    cal_weights : array_like of shape (n,)
    test_pred : array_like of shape (m,)
    test_weights : array_like of shape (m,)
    alpha : float
    cal_scale, test_scale : array_like, optional
        Positive scales; give both or neither.

    Returns
    -------
    lower, upper : numpy.ndarray of shape (m,)

    Examples
    --------
    >>> lo, hi = weighted_conformal_interval([0.0] * 4, [1.0, -2.0, 3.0, 0.5], [1, 1, 1, 1],
    ...                                      [10.0], [1.0], alpha=0.4)
    >>> float(lo[0]), float(hi[0])
    (8.0, 12.0)
    """
    cal_pred = as_float_array(cal_pred, "cal_pred", ndim=1)
    cal_y = as_float_array(cal_y, "cal_y", ndim=1)
    n = check_same_length(cal_pred=cal_pred, cal_y=cal_y)
    test_pred = as_float_array(test_pred, "test_pred", ndim=1)
    test_weights = _check_weights(test_weights, "test_weights", test_pred.size)
    if (cal_scale is None) != (test_scale is None):
        raise ValueError("give both cal_scale and test_scale or neither")
    scores = np.abs(cal_y - cal_pred)
    width_scale = 1.0
    if cal_scale is not None:
        scores = scores / _check_scale(cal_scale, "cal_scale", n)
        width_scale = _check_scale(test_scale, "test_scale", test_pred.size)
    width = weighted_conformal_quantile(scores, cal_weights, test_weights, alpha) * width_scale
    return test_pred - width, test_pred + width
