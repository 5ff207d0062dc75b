"""Conformal quantiles: the plain split-conformal threshold and its weighted form.

Under covariate shift (Tibshirani et al. 2019) the calibration scores are
weighted by the likelihood ratio and the test point keeps its own mass at
``+inf``.
"""

from __future__ import annotations

import math

import numpy as np

from calibtut._numeric import conformal_rank
from calibtut._validation import (
    as_float_array,
    check_alpha,
    check_positive,
    check_real,
    check_weights,
)

__all__ = ["conformal_quantile", "weighted_conformal_quantile"]


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


# Weighted split conformal prediction under covariate shift (Tibshirani, Barber, Candes & Ramdas 2019).
#
# With calibration scores s_1..s_n, their weights w_i = w(x_i) (a density ratio q/p, known or
# estimated) and a test point of weight w(x), the threshold is the (1 - alpha) quantile of
# sum_i p_i(x) delta_{s_i} + p_{n+1}(x) delta_{+inf}, p_i(x) = w_i / (sum_j w_j + w(x)),
# p_{n+1}(x) = w(x) / (sum_j w_j + w(x)). The test point's own mass sits at +inf: dropping it
# (normalising the calibration weights alone) is the classic bug and loses the guarantee.

# relative slack in the comparison cumulative weight >= (1 - alpha) * total, so that equal weights
# reproduce conformal_rank exactly when (n + 1)(1 - alpha) is an integer on paper
_WEIGHT_RTOL = 1e-12


def _test_weights(test_weight, name, n=None):
    """Per-test-point weights: non-negative and finite, a number or one per point.

    Unlike calibration weights (:func:`calibtut._validation.check_weights`),
    test weights may all be zero: each one only sets its own point's mass at
    ``+inf``, and zero drops it (the classic bug that :func:`weighted_conformal_quantile`
    documents).
    """
    if not isinstance(test_weight, (str, bytes)) and np.ndim(test_weight) == 0:
        test_weight = [check_real(test_weight, name, low=0)]
    weights = check_positive(test_weight, name, strict=False, ndim=1)
    if n is not None and weights.size != n:
        raise ValueError(f"{name} must have one entry per test point ({n}), got {weights.size}")
    return weights


def weighted_conformal_quantile(cal_scores, cal_weight, test_weight, alpha):
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
    cal_weight : array_like of shape (n,)
        Non-negative weights ``w(x_i)`` of the calibration points, not all
        zero (only ratios matter: ``w`` and ``c w`` give the same thresholds).
    test_weight : float or array_like of shape (m,)
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
    weights = check_weights(cal_weight, "cal_weight", n=scores.size)
    test = _test_weights(test_weight, "test_weight")
    alpha = check_alpha(alpha)
    order = np.argsort(scores, kind="stable")
    sorted_scores = scores[order]
    cumulative = np.cumsum(weights[order])
    total = cumulative[-1] + test
    target = (1 - alpha) * total * (1 - _WEIGHT_RTOL)
    k = np.searchsorted(cumulative, target, side="left")
    padded = np.append(sorted_scores, np.inf)
    return padded[k]
