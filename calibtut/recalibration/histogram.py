"""Histogram binning of class probabilities (Zadrozny & Elkan 2001), top-label or one-vs-rest.

The probability axis [0, 1] is cut into ``n_bins`` bins, equal-width or
equal-mass (edges at the calibration confidences' quantiles), and every
prediction falling in a bin is replaced by the frequency of the event among
the calibration points of that bin:

* ``mode="one-vs-rest"``: one binning per class column, for the event
  ``y == k``; the rows are renormalised to sum to one (netcal's multiclass
  ``HistogramBinning``).
* ``mode="top-label"``: one binning of the top-label confidence
  ``max_k p_k`` for the event "the argmax is right"; the predicted class
  receives the binned accuracy and the other classes share the rest in
  proportion to their probabilities (the argmax is kept unless the binned
  accuracy falls below a share of another class).

Bins use the edge convention of :mod:`calibtut.metrics.classification`
(``closed="right"`` by default). An empty bin maps to its midpoint.
:func:`histogram_binned_probs` is the one-call wrapper of :class:`HistogramBinning`.
"""

from __future__ import annotations

import numpy as np

from calibtut._estimator import Estimator, rule
from calibtut._validation import (
    check_class_probs,
    check_fitted,
    check_int,
    check_labels,
    check_weights,
)
from calibtut.metrics import assign_bins, bin_edges

__all__ = ["HistogramBinning", "histogram_binned_probs"]

_MODES = ("one-vs-rest", "top-label")
_STRATEGIES = ("uniform", "quantile")
_CLOSED = ("right", "left")


def _choice(value, name, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


class HistogramBinning(Estimator):
    """Histogram binning: each bin of the probability axis maps to its calibration frequency.

    Parameters
    ----------
    n_bins : int, default 10
        Number of bins.
    strategy : {"uniform", "quantile"}, default "uniform"
        Equal-width bins, or equal-mass bins whose interior edges are the
        quantiles of the calibration probabilities (per column in
        one-vs-rest mode).
    mode : {"one-vs-rest", "top-label"}, default "one-vs-rest"
        Bin every class column, or only the top-label confidence.
    closed : {"right", "left"}, default "right"
        Which bin a value on an interior edge joins (see
        :func:`calibtut.metrics.assign_bins`).

    Attributes
    ----------
    edges_ : numpy.ndarray of shape (n_maps, n_bins + 1)
        Bin edges of each map (one map in top-label mode, one per class).
    values_ : numpy.ndarray of shape (n_maps, n_bins)
        Calibrated value of each bin (the midpoint where a bin is empty).
    counts_ : numpy.ndarray of shape (n_maps, n_bins)
        Summed calibration weight of each bin.

    See Also
    --------
    PlattScaling : a parametric (logistic) map.
    calibtut.metrics.reliability_data : the same bins as a diagram.

    References
    ----------
    - Zadrozny & Elkan, "Obtaining calibrated probability estimates from
      decision trees and naive Bayesian classifiers", ICML 2001.
    - Gupta & Ramdas, "Top-label calibration and multiclass-to-binary
      reductions", ICLR 2022.

    Examples
    --------
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.2, 0.8]]
    >>> model = HistogramBinning(n_bins=2).fit(probs, [0, 1, 1, 1])
    >>> model.values_.round(2)  # class 0: bin [0, .5] holds 0/2 hits, (.5, 1] holds 1/2
    array([[0. , 0.5],
           [0.5, 1. ]])
    >>> model.predict_proba([[0.6, 0.4]]).round(2)  # (.5, .5): class 0 in (.5, 1], class 1 in [0, .5]
    array([[0.5, 0.5]])
    """

    _parameter_constraints = {
        "n_bins": rule(check_int, minimum=1),
        "strategy": rule(_choice, choices=_STRATEGIES),
        "mode": rule(_choice, choices=_MODES),
        "closed": rule(_choice, choices=_CLOSED),
    }

    def __init__(self, *, n_bins=10, strategy="uniform", mode="one-vs-rest", closed="right"):
        self.n_bins = n_bins
        self.strategy = strategy
        self.mode = mode
        self.closed = closed

    def _columns(self, probs):
        """The binned values: the top-label confidence, or every column."""
        return probs.max(axis=1, keepdims=True) if self.params_.mode == "top-label" else probs

    def fit(self, cal_probs, cal_y, *, cal_weight=None):
        """Bin the calibration probabilities and store each bin's event frequency.

        Parameters
        ----------
        cal_probs : array_like of shape (n, n_classes)
            Class probabilities of the model on the calibration set.
        cal_y : array_like of int, shape (n,)
            True classes in ``0, ..., n_classes - 1``.
        cal_weight : array_like of shape (n,), optional
            Non-negative weights, not all zero (a bin's value is then the
            weighted frequency).

        Returns
        -------
        HistogramBinning
            ``self``.
        """
        self._validate_params()
        probs = check_class_probs(cal_probs, "cal_probs")
        n, n_classes = probs.shape
        labels = check_labels(cal_y, "cal_y", n_classes=n_classes, n=n)
        weights = np.ones(n) if cal_weight is None else check_weights(cal_weight, "cal_weight", n=n)
        if self.params_.mode == "top-label":
            events = (np.argmax(probs, axis=1) == labels)[:, None]
        else:
            events = labels[:, None] == np.arange(n_classes)
        columns = self._columns(probs)
        edges, values, counts = [], [], []
        for k in range(columns.shape[1]):
            e = bin_edges(columns[:, k], self.params_.n_bins, self.params_.strategy)
            idx = assign_bins(columns[:, k], e, self.params_.closed)
            count = np.bincount(idx, weights=weights, minlength=self.params_.n_bins)
            hits = np.bincount(idx, weights=weights * events[:, k], minlength=self.params_.n_bins)
            middle = 0.5 * (e[:-1] + e[1:])
            with np.errstate(invalid="ignore", divide="ignore"):
                values.append(np.where(count > 0, hits / np.where(count > 0, count, 1), middle))
            edges.append(e)
            counts.append(count)
        self.edges_, self.values_, self.counts_ = np.array(edges), np.array(values), np.array(counts)
        self.n_classes_ = n_classes
        return self

    def predict_proba(self, test_probs):
        """Calibrated class probabilities.

        Parameters
        ----------
        test_probs : array_like of shape (m, n_classes)
            Class probabilities of the model at the test inputs.

        Returns
        -------
        numpy.ndarray of shape (m, n_classes)
            Rows sum to one; a row whose binned values are all zero becomes
            uniform.
        """
        check_fitted(self, "values_")
        probs = check_class_probs(test_probs, "test_probs")
        if probs.shape[1] != self.n_classes_:
            raise ValueError(f"test_probs must have {self.n_classes_} columns as in fit, got shape {probs.shape}")
        columns = self._columns(probs)
        binned = np.column_stack([self.values_[k][assign_bins(columns[:, k], self.edges_[k], self.params_.closed)]
                                  for k in range(columns.shape[1])])
        if self.params_.mode == "top-label":
            top = np.argmax(probs, axis=1)
            rows = np.arange(len(probs))
            rest = 1 - columns[:, 0]
            with np.errstate(invalid="ignore", divide="ignore"):
                out = np.where(rest[:, None] > 0, probs * ((1 - binned) / np.where(rest > 0, rest, 1)[:, None]),
                               (1 - binned) / max(self.n_classes_ - 1, 1))
            out[rows, top] = binned[:, 0]
            return out
        total = binned.sum(axis=1, keepdims=True)
        uniform = np.full_like(binned, 1.0 / self.n_classes_)
        return np.divide(binned, total, out=uniform, where=total > 0)


def histogram_binned_probs(cal_probs, cal_y, test_probs, *, cal_weight=None, n_bins=10, strategy="uniform",
                           mode="one-vs-rest", closed="right"):
    """Histogram-binned test probabilities in one call (:class:`HistogramBinning`).

    Parameters
    ----------
    cal_probs : array_like of shape (n, n_classes)
        Calibration class probabilities.
    cal_y : array_like of int, shape (n,)
        Calibration classes.
    test_probs : array_like of shape (m, n_classes)
        Test class probabilities.
    cal_weight : array_like of shape (n,), optional
        Non-negative calibration weights, not all zero.
    n_bins : int, default 10
        Number of bins.
    strategy : {"uniform", "quantile"}, default "uniform"
        Equal-width or equal-mass bins.
    mode : {"one-vs-rest", "top-label"}, default "one-vs-rest"
        What is binned.
    closed : {"right", "left"}, default "right"
        Edge convention.

    Returns
    -------
    numpy.ndarray of shape (m, n_classes)

    See Also
    --------
    HistogramBinning : the class, with the bins and their values.

    References
    ----------
    Zadrozny & Elkan, ICML 2001.

    Examples
    --------
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.2, 0.8]]
    >>> histogram_binned_probs(probs, [0, 0, 1, 0], [[0.7, 0.3]], n_bins=2, mode="top-label").round(2)
    array([[0.75, 0.25]])
    """
    model = HistogramBinning(n_bins=n_bins, strategy=strategy, mode=mode, closed=closed)
    return model.fit(cal_probs, cal_y, cal_weight=cal_weight).predict_proba(test_probs)
