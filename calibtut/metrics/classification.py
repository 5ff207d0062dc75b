"""Calibration metrics for classifiers: binned ECE, reliability data, Brier score.

Binning conventions
-------------------
Confidences are grouped into ``n_bins`` bins whose edges are either equally
spaced on [0, 1] (``strategy="uniform"``) or empirical quantiles of the
confidences (``strategy="quantile"``, equal-mass bins; the outer edges are 0
and 1). Which bin a value lying exactly on an interior edge joins is set by
``closed``:

* ``closed="right"`` (default): bins are ``[0, c_1]``, then ``(c_{b-1}, c_b]``.
  This is what the code behind the covariate-shift paper [4] computes (and the
  widespread implementation of Guo et al. 2017).
* ``closed="left"``: bins are ``[c_{b-1}, c_b)`` and the last one is
  ``[c_{B-1}, 1]``. This is the convention written in the text of [4] (eq. 9)
  and the one of ``netcal`` (``numpy.histogramdd``).

Edges are ``numpy.linspace(0, 1, n_bins + 1)``, so whether a confidence such as
``k / 15`` counts as "on the edge" follows floating-point equality with that
grid.

References
----------
- [4] Park, Bastani, Weimer & Lee, "Calibrated Prediction with Covariate Shift
  via Unsupervised Domain Adaptation", AISTATS 2020 (paper 004).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import stats

from calibtut._validation import (
    as_float_array,
    check_alpha,
    check_choice,
    check_class_probs,
    check_int,
    check_labels,
    check_probabilities,
    check_same_length,
)

__all__ = [
    "BrierDecomposition",
    "assign_bins",
    "bin_edges",
    "brier_decomposition",
    "brier_score",
    "classwise_ece",
    "consistency_band",
    "expected_calibration_error",
    "overconfidence_error",
    "reliability_data",
    "top_label_ece",
]

_STRATEGIES = ("uniform", "quantile")
_CLOSED = ("right", "left")


def _check_confidence_correct(confidence, correct):
    confidence = as_float_array(confidence, "confidence", finite=False, allow_empty=True)
    if confidence.ndim == 2:
        raise ValueError(
            f"confidence must be 1-d, the predicted probability of one event per point, got shape "
            f"{confidence.shape}; for (n, n_classes) class probabilities and labels use "
            "top_label_ece(probs, labels) (confidence probs.max(axis=1), correct probs.argmax(axis=1) == labels) "
            "or classwise_ece(probs, labels)"
        )
    confidence = check_probabilities(confidence, "confidence", ndim=1)
    correct = as_float_array(correct, "correct", ndim=1)
    if not np.all((correct == 0) | (correct == 1)):
        raise ValueError("correct must contain only 0/1 (or False/True) values")
    check_same_length(confidence=confidence, correct=correct)
    return confidence, correct


def _check_probs_labels(probs, labels):
    probs = check_class_probs(probs, "probs")
    return probs, check_labels(labels, "labels", n_classes=probs.shape[1], n=probs.shape[0])


def bin_edges(confidence, n_bins=15, strategy="uniform"):
    """Bin edges for confidence values.

    Parameters
    ----------
    confidence : array_like, shape (n,)
        Values in [0, 1] (checked in every case; their quantiles are the
        edges of ``strategy="quantile"``).
    n_bins : int, default 15
        Number of bins (15 as in [4]).
    strategy : {"uniform", "quantile"}
        Equal-width bins on [0, 1], or equal-mass bins whose interior edges are
        empirical quantiles of ``confidence`` (outer edges 0 and 1).

    Returns
    -------
    numpy.ndarray, shape (n_bins + 1,)
        Non-decreasing edges from 0 to 1 (equal-mass edges can repeat when
        confidences are tied, which leaves some bins empty).

    Examples
    --------
    >>> bin_edges([0.2, 0.9], n_bins=4)
    array([0.  , 0.25, 0.5 , 0.75, 1.  ])
    """
    confidence = check_probabilities(confidence, "confidence", ndim=1)
    return _bin_edges(confidence, check_int(n_bins, "n_bins", minimum=1), check_choice(strategy, "strategy",
                                                                                          _STRATEGIES))


def _bin_edges(confidence, n_bins, strategy):
    """:func:`bin_edges` of checked arguments."""
    if strategy == "uniform":
        return np.linspace(0.0, 1.0, n_bins + 1)
    edges = np.quantile(confidence, np.linspace(0.0, 1.0, n_bins + 1))
    edges[0], edges[-1] = 0.0, 1.0
    return edges


def assign_bins(confidence, edges, closed="right"):
    """Index of the bin each confidence falls in.

    Parameters
    ----------
    confidence : array_like, shape (n,)
        Values in [0, 1].
    edges : array_like, shape (n_bins + 1,)
        Non-decreasing bin edges from 0 to 1 (see :func:`bin_edges`).
    closed : {"right", "left"}
        ``"right"``: ``[0, c_1]`` then ``(c_{b-1}, c_b]``; ``"left"``:
        ``[c_{b-1}, c_b)`` with the last bin ``[c_{B-1}, 1]``.

    Returns
    -------
    numpy.ndarray of int, shape (n,)
        Bin indices in ``0 .. n_bins - 1``.

    Examples
    --------
    >>> edges = [0.0, 0.5, 1.0]
    >>> assign_bins([0.0, 0.5, 1.0], edges, closed="right").tolist()
    [0, 0, 1]
    >>> assign_bins([0.0, 0.5, 1.0], edges, closed="left").tolist()
    [0, 1, 1]
    """
    confidence = check_probabilities(confidence, "confidence", ndim=1, allow_empty=True)
    edges = check_probabilities(edges, "edges", ndim=1)
    if edges.size < 2 or np.any(np.diff(edges) < 0):
        raise ValueError("edges must hold at least 2 non-decreasing values")
    return _assign_bins(confidence, edges, check_choice(closed, "closed", _CLOSED))


def _assign_bins(confidence, edges, closed, uniform=False):
    """:func:`assign_bins` of checked arguments.

    On the uniform grid (``uniform=True``) the bin is ``floor(c * n_bins)``,
    moved by one where floating point puts ``c`` on the other side of the
    grid's edge than ``numpy.linspace`` does: the same bins as the binary
    search, in a few passes.
    """
    n_bins = edges.size - 1
    if not uniform:
        idx = np.searchsorted(edges, confidence, side="left" if closed == "right" else "right") - 1
        return np.clip(idx, 0, n_bins - 1)
    idx = np.minimum((confidence * n_bins).astype(np.int64), n_bins - 1)
    if closed == "right":  # (e_b, e_b+1], the first bin closed
        idx -= (confidence <= edges[idx]) & (idx > 0)
        idx += confidence > edges[idx + 1]
    else:  # [e_b, e_b+1), the last bin closed
        idx -= confidence < edges[idx]
        idx += (confidence >= edges[idx + 1]) & (idx < n_bins - 1)
    return idx


def _bin_index(confidence, n_bins, strategy, closed):
    """The edges and each confidence's bin, for checked arguments."""
    n_bins = check_int(n_bins, "n_bins", minimum=1)
    edges = _bin_edges(confidence, n_bins, check_choice(strategy, "strategy", _STRATEGIES))
    return edges, _assign_bins(confidence, edges, closed, uniform=strategy == "uniform")


def _binned_gap(confidence, correct, n_bins, strategy, closed):
    """Each bin's summed ``correct - confidence`` (one weighted bincount)."""
    edges, idx = _bin_index(confidence, n_bins, strategy, closed)
    return np.bincount(idx, weights=correct - confidence, minlength=edges.size - 1)


def _binned(confidence, correct, n_bins, strategy, closed):
    edges, idx = _bin_index(confidence, n_bins, strategy, closed)
    n_b = edges.size - 1
    count = np.bincount(idx, minlength=n_b).astype(np.float64)
    sum_conf = np.bincount(idx, weights=confidence, minlength=n_b)
    sum_acc = np.bincount(idx, weights=correct, minlength=n_b)
    return edges, count, sum_conf, sum_acc


def reliability_data(confidence, correct, n_bins=15, strategy="uniform", closed="right"):
    """Per-bin counts, mean confidence and accuracy for a reliability diagram.

    Parameters
    ----------
    confidence : array_like, shape (n,)
        Predicted probability of the event (for top-label diagrams: the largest
        class probability).
    correct : array_like of {0, 1} or bool, shape (n,)
        Whether the event happened (the predicted label was right).
    n_bins : int, default 15
    strategy : {"uniform", "quantile"}
    closed : {"right", "left"}
        Edge convention, see the module docstring.

    Returns
    -------
    pandas.DataFrame
        One row per bin with columns ``bin_lower``, ``bin_upper``, ``count``,
        ``mean_confidence`` and ``accuracy`` (NaN for empty bins).

    Examples
    --------
    >>> df = reliability_data([0.1, 0.3, 0.8, 0.9], [0, 1, 1, 1], n_bins=2)
    >>> df[["count", "mean_confidence", "accuracy"]].round(2).values.tolist()
    [[2.0, 0.2, 0.5], [2.0, 0.85, 1.0]]
    """
    confidence, correct = _check_confidence_correct(confidence, correct)
    import pandas as pd  # here, not at the top: importing calibtut.metrics does not load pandas

    check_choice(closed, "closed", _CLOSED)
    edges, count, sum_conf, sum_acc = _binned(confidence, correct, n_bins, strategy, closed)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.where(count > 0, sum_conf / count, np.nan)
        acc = np.where(count > 0, sum_acc / count, np.nan)
    return pd.DataFrame(
        {
            "bin_lower": edges[:-1],
            "bin_upper": edges[1:],
            "count": count.astype(np.int64),
            "mean_confidence": mean_conf,
            "accuracy": acc,
        }
    )


def consistency_band(count, mean_confidence, alpha=0.1):
    """Band of accuracies a calibrated model would show in each bin.

    For a bin holding ``count`` predictions with mean confidence ``p``, a
    calibrated model's number of hits is taken as Binomial(``count``, ``p``);
    the band is its central ``1 - alpha`` interval divided by ``count``.
    The exact law is Poisson-binomial (confidences differ inside a bin); the
    binomial with the same mean has at least its variance, so the band is
    slightly conservative.

    Parameters
    ----------
    count : array_like of int, shape (n_bins,)
        Predictions per bin (e.g. ``reliability_data(...)["count"]``).
    mean_confidence : array_like, shape (n_bins,)
        Mean confidence per bin; NaN allowed where ``count`` is 0.
    alpha : float, default 0.1
        Miscoverage: ``alpha=0.1`` gives a 90% band.

    Returns
    -------
    lower, upper : numpy.ndarray, shape (n_bins,)
        Accuracy bounds (NaN for empty bins).

    Examples
    --------
    >>> lo, hi = consistency_band([100], [0.8], alpha=0.1)
    >>> float(lo[0]), float(hi[0])
    (0.73, 0.86)
    """
    alpha = check_alpha(alpha)
    count = as_float_array(count, "count", ndim=1)
    if np.any(count < 0) or np.any(count != np.round(count)):
        raise ValueError("count must hold non-negative integers")
    mean_confidence = as_float_array(mean_confidence, "mean_confidence", ndim=1, finite=False)
    check_same_length(count=count, mean_confidence=mean_confidence)
    filled = count > 0
    p = mean_confidence[filled]
    if not np.all(np.isfinite(p)) or np.any(p < 0) or np.any(p > 1):
        raise ValueError("mean_confidence must lie in [0, 1] wherever count > 0")
    lower = np.full(count.shape, np.nan)
    upper = np.full(count.shape, np.nan)
    n = count[filled]
    lower[filled] = stats.binom.ppf(alpha / 2, n, p) / n
    upper[filled] = stats.binom.ppf(1 - alpha / 2, n, p) / n
    return lower, upper


def expected_calibration_error(confidence, correct, n_bins=15, strategy="uniform", closed="right"):
    r"""Binned expected calibration error (ECE).

    .. math:: \mathrm{ECE} = \sum_b \frac{|T_b|}{n}\,\lvert \mathrm{acc}_b - \mathrm{conf}_b\rvert

    as eq. (9) of [4]; empty bins contribute nothing.

    Parameters
    ----------
    confidence : array_like, shape (n,)
        Predicted probability of the event.
    correct : array_like of {0, 1} or bool, shape (n,)
    n_bins : int, default 15
    strategy : {"uniform", "quantile"}
    closed : {"right", "left"}
        Edge convention, see the module docstring.

    Returns
    -------
    float
        In [0, 1] (the paper reports it x100).

    Examples
    --------
    >>> # bin [0, .5]: conf .2, acc .5 (gap .3); bin (.5, 1]: conf .85, acc 1 (gap .15)
    >>> round(expected_calibration_error([0.1, 0.3, 0.8, 0.9], [0, 1, 1, 1], n_bins=2), 3)
    0.225
    """
    confidence, correct = _check_confidence_correct(confidence, correct)
    check_choice(closed, "closed", _CLOSED)
    return _ece(confidence, correct, n_bins, strategy, closed)


def _ece(confidence, correct, n_bins, strategy, closed):
    """:func:`expected_calibration_error` of checked arguments."""
    return float(np.sum(np.abs(_binned_gap(confidence, correct, n_bins, strategy, closed))) / confidence.size)


def overconfidence_error(confidence, correct, n_bins=15, strategy="uniform", closed="right"):
    r"""Over-confident ECE of [4]: only bins whose confidence exceeds accuracy count.

    .. math:: \sum_b \frac{|T_b|}{n}\,\max(\mathrm{conf}_b - \mathrm{acc}_b, 0)

    Parameters are those of :func:`expected_calibration_error`.

    Returns
    -------
    float
        In [0, ECE].

    Examples
    --------
    >>> # bin [0, .5]: conf .2 < acc .5 -> 0; bin (.5, 1]: conf .85 > acc .5 -> .35 * 2/4
    >>> round(overconfidence_error([0.1, 0.3, 0.8, 0.9], [0, 1, 1, 0], n_bins=2), 3)
    0.175
    """
    confidence, correct = _check_confidence_correct(confidence, correct)
    check_choice(closed, "closed", _CLOSED)
    gap = _binned_gap(confidence, correct, n_bins, strategy, closed)
    return float(np.sum(np.maximum(-gap, 0.0)) / confidence.size)


def top_label_ece(probs, labels, n_bins=15, strategy="uniform", closed="right"):
    """ECE of the top label: confidence = largest probability, correct = argmax hits.

    Ties in ``probs`` pick the first maximal column (``numpy.argmax``).

    Parameters
    ----------
    probs : array_like, shape (n, n_classes)
        Class probabilities (rows sum to 1).
    labels : array_like of int, shape (n,)
        True classes in ``0 .. n_classes - 1``.
    n_bins, strategy, closed
        As in :func:`expected_calibration_error`.

    Returns
    -------
    float

    Examples
    --------
    >>> probs = [[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]]
    >>> # confidences .9 (right), .6 (wrong), .8 (right) in separate bins:
    >>> # (|.9 - 1| + |.6 - 0| + |.8 - 1|) / 3 = .3
    >>> round(top_label_ece(probs, [0, 1, 1], n_bins=5), 3)
    0.3
    """
    probs, labels = _check_probs_labels(probs, labels)
    check_choice(closed, "closed", _CLOSED)
    pred = np.argmax(probs, axis=1)
    correct = (pred == labels).astype(np.float64)
    return _ece(probs[np.arange(len(probs)), pred], correct, n_bins, strategy, closed)


def classwise_ece(probs, labels, n_bins=15, strategy="uniform", closed="right"):
    """Class-wise ECE: mean over classes k of the ECE of ``probs[:, k]`` for the event ``labels == k``.

    Parameters
    ----------
    probs : array_like, shape (n, n_classes)
    labels : array_like of int, shape (n,)
    n_bins, strategy, closed
        As in :func:`expected_calibration_error` (bins are built per class).

    Returns
    -------
    float

    Examples
    --------
    >>> probs = [[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]]
    >>> # class 0: (|.9 - 1| + |.6 - 0| + |.2 - 0|) / 3 = .3; class 1: (.1 + .6 + .2) / 3 = .3
    >>> round(classwise_ece(probs, [0, 1, 1], n_bins=5), 3)
    0.3
    """
    probs, labels = _check_probs_labels(probs, labels)
    check_choice(closed, "closed", _CLOSED)
    return float(np.mean([_ece(probs[:, k], (labels == k).astype(np.float64), n_bins, strategy, closed)
                          for k in range(probs.shape[1])]))


def _binary_or_multiclass(probs, labels):
    """Return (forecasts, outcomes) as (n, m) arrays: m = 1 for binary input."""
    probs = as_float_array(probs, "probs", ndim=(1, 2))
    if probs.ndim == 1:
        probs = check_probabilities(probs, "probs")
        outcome = check_labels(labels, "labels", n_classes=2, n=probs.size)
        return probs[:, None], outcome[:, None].astype(np.float64)
    probs, labels = _check_probs_labels(probs, labels)
    return probs, np.eye(probs.shape[1])[labels]


def brier_score(probs, labels):
    r"""Brier score (mean squared distance between forecast and one-hot outcome).

    * ``probs`` of shape (n,): binary forecasts of P(y = 1);
      :math:`\frac1n\sum_i (p_i - y_i)^2`, as ``sklearn.metrics.brier_score_loss``.
    * ``probs`` of shape (n, K): Brier's original multi-class score
      :math:`\frac1n\sum_i\sum_k (p_{ik} - 1[y_i = k])^2` (in [0, 2]; for
      K = 2 it is twice the binary score).

    Parameters
    ----------
    probs : array_like, shape (n,) or (n, n_classes)
    labels : array_like of int, shape (n,)

    Returns
    -------
    float

    Examples
    --------
    >>> # (0.8-1)^2 + (0.3-0)^2 = 0.04 + 0.09 -> mean 0.065
    >>> round(brier_score([0.8, 0.3], [1, 0]), 4)
    0.065
    >>> round(brier_score([[0.2, 0.8], [0.7, 0.3]], [1, 0]), 4)
    0.13
    """
    f, o = _binary_or_multiclass(probs, labels)
    return float(np.mean(np.sum((f - o) ** 2, axis=1)))


class BrierDecomposition(NamedTuple):
    """Terms of the binned Murphy decomposition (see :func:`brier_decomposition`)."""

    brier: float
    reliability: float
    resolution: float
    uncertainty: float
    within_bin_variance: float
    within_bin_covariance: float


def brier_decomposition(probs, labels, n_bins=None, closed="right"):
    r"""Murphy decomposition of the Brier score: reliability - resolution + uncertainty.

    Forecasts are grouped into bins (per class column for multi-class input;
    the class terms are summed). With :math:`\bar f_b, \bar o_b` the mean
    forecast and outcome frequency in bin b, :math:`w_b` its share and
    :math:`\bar o` the base rate,

    * reliability :math:`= \sum_b w_b (\bar f_b - \bar o_b)^2`,
    * resolution :math:`= \sum_b w_b (\bar o_b - \bar o)^2`,
    * uncertainty :math:`= \bar o (1 - \bar o)`,
    * within-bin variance :math:`\mathrm{WBV} = \frac1n \sum_i (f_i - \bar f_{b(i)})^2`,
    * within-bin covariance :math:`\mathrm{WBC} = \frac1n \sum_i (f_i - \bar f_{b(i)})(o_i - \bar o_{b(i)})`.

    The identity ``brier = reliability - resolution + uncertainty + WBV - 2 WBC``
    always holds exactly (Stephenson, Coelho & Jolliffe 2008). The classical
    three-term identity ``brier = reliability - resolution + uncertainty``
    holds exactly when every bin holds a single distinct forecast value (then
    WBV = WBC = 0), e.g. with ``n_bins=None``, which puts each distinct value in
    its own bin (Murphy 1973).

    Parameters
    ----------
    probs : array_like, shape (n,) or (n, n_classes)
        Binary P(y = 1) or class probabilities (see :func:`brier_score`).
    labels : array_like of int, shape (n,)
    n_bins : int or None, default None
        None: one bin per distinct forecast value; an int: equal-width bins.
    closed : {"right", "left"}
        Edge convention for equal-width bins.

    Returns
    -------
    BrierDecomposition
        Named tuple of floats.

    Examples
    --------
    >>> # forecasts .2 (outcomes 0,0,1,0) and .8 (1,1,0,1): obar = .5
    >>> d = brier_decomposition([.2] * 4 + [.8] * 4, [0, 0, 1, 0, 1, 1, 0, 1])
    >>> # brier = (3 * .2^2 + .8^2) / 4 = .19; rel = (.2-.25)^2 = .0025,
    >>> # res = (.25-.5)^2 = .0625, unc = .25; .0025 - .0625 + .25 = .19
    >>> [round(v, 4) for v in d[:4]]
    [0.19, 0.0025, 0.0625, 0.25]
    """
    f, o = _binary_or_multiclass(probs, labels)
    check_choice(closed, "closed", _CLOSED)
    n = f.shape[0]
    totals = np.zeros(5)
    for k in range(f.shape[1]):
        fk, ok = f[:, k], o[:, k]
        if n_bins is None:
            _, idx = np.unique(fk, return_inverse=True)
        else:
            idx = _bin_index(fk, n_bins, "uniform", closed)[1]
        count = np.bincount(idx).astype(np.float64)
        used = count > 0
        fbar = np.bincount(idx, weights=fk)[used] / count[used]
        obar = np.bincount(idx, weights=ok)[used] / count[used]
        w = count[used] / n
        base = ok.mean()
        remap = np.cumsum(used) - 1
        f_dev = fk - fbar[remap[idx]]
        o_dev = ok - obar[remap[idx]]
        totals += [
            np.sum(w * (fbar - obar) ** 2),
            np.sum(w * (obar - base) ** 2),
            base * (1 - base),
            np.mean(f_dev**2),
            np.mean(f_dev * o_dev),
        ]
    return BrierDecomposition(brier_score(probs, labels), *map(float, totals))
