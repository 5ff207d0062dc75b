"""Monte Carlo tests of calibration.

* :func:`pce_test`: the simulation test of probabilistic calibration of [2]
  (Section 4 and Appendix B.5): the PCE of observed PITs is compared with its
  sampling distribution under uniform PITs of the same size.
* :func:`batch_pce`: the PCE as the authors' code reports it, computed on
  consecutive batches of 512 rows and averaged over the batches; PCE is not
  linear in the sample, so a calibrated model's expected per-batch PCE is
  larger than its full-set PCE. ``batch_size`` in :func:`pce_null_distribution`
  and :func:`pce_test` gives the null and the test of that statistic.
* :func:`ece_test`: consistency resampling for classifiers (Broecker & Smith
  2007): outcomes are redrawn as Bernoulli(confidence), i.e. as a calibrated
  model would produce them, and the ECE recomputed.

Both return the Monte Carlo p-value ``(1 + #{null >= observed}) / (1 + n_sim)``,
which is a valid p-value for any ``n_sim`` and never 0. Paper [2] reports the
plain fraction ``#{null >= observed} / n_sim`` (hence its p-values of zero),
which is ``numpy.mean(result.null_distribution >= result.statistic)``.

References
----------
- [2] Dheur & Ben Taieb, ICML 2023 (paper 002).
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np

from calibtut._validation import check_choice, check_int, check_rng
from calibtut.metrics.classification import (
    _CLOSED,
    _check_confidence_correct,
    assign_bins,
    bin_edges,
    expected_calibration_error,
)
from calibtut.metrics.regression import _check_p, _grid, check_pit, pce

__all__ = ["CalibrationTestResult", "batch_pce", "ece_test", "pce_null_distribution", "pce_test"]

_CHUNK = 2_000_000  # simulated values held in memory at once


class CalibrationTestResult(NamedTuple):
    """Observed statistic, Monte Carlo p-value and the simulated null values."""

    statistic: float
    pvalue: float
    null_distribution: np.ndarray


def _sizes(n):
    if isinstance(n, (numbers.Number, str, bytes)) or not hasattr(n, "__iter__"):
        return [check_int(n, "n", minimum=1)]
    sizes = [check_int(v, "n", minimum=1) for v in n]
    if not sizes:
        raise ValueError("n must not be empty")
    return sizes


def _pce_rows(u, p, grid):
    """PCE of every row of a matrix of PIT values (same estimator as :func:`pce`)."""
    u = np.sort(u, axis=1)
    n = u.shape[1]
    if grid is None:
        return np.mean(np.abs(u - np.arange(1, n + 1) / (n + 1)) ** p, axis=1)
    freq = np.stack([np.searchsorted(row, grid, side="right") for row in u]) / n
    return np.mean(np.abs(freq - grid) ** p, axis=1)


def _batches(size, batch_size):
    """Column slices of consecutive batches of ``batch_size`` rows, the last one shorter (none: one slice)."""
    if batch_size is None:
        return [slice(0, size)]
    return [slice(start, min(size, start + batch_size)) for start in range(0, size, batch_size)]


def _check_batch_size(batch_size):
    return None if batch_size is None else check_int(batch_size, "batch_size", minimum=1)


def _runs(pit):
    """The checked PIT arrays of one run (an array) or several (a list or tuple of arrays)."""
    if isinstance(pit, (list, tuple)) and len(pit) > 0 and np.ndim(pit[0]) == 1:
        return [check_pit(r) for r in pit]
    return [check_pit(pit)]


def _mean_pce(runs, p, levels, batch_size):
    """The PCE of each run (per batch when ``batch_size``, then averaged), averaged over runs."""
    return float(np.mean([np.mean([pce(r[b], p, levels) for b in _batches(r.size, batch_size)]) for r in runs]))


def batch_pce(pit, batch_size=512, p=1):
    """PCE averaged over consecutive batches of PIT values, as paper 002's code reports every metric.

    The authors' validation and test loaders hold ``batch_size`` rows
    (the last batch the remainder) and their metric collector averages each
    batch's value, unweighted. For additive metrics that is the full-set
    mean up to the last batch's weight; the PCE of a batch is larger on
    average than that of the whole set, so the per-batch PCE of even a
    calibrated model grows as the batches shrink.

    Parameters
    ----------
    pit : array_like of shape (n,), or a list or tuple of such arrays
        PIT values in their evaluation order; with several arrays (runs) the
        result is the mean over runs.
    batch_size : int, default 512
        Rows per batch, >= 1.
    p : float, default 1
        Exponent of the sorted-form PCE (:func:`~calibtut.metrics.regression.pce`),
        the authors' estimator for the mixtures' PITs.

    Returns
    -------
    float

    Examples
    --------
    >>> u = np.random.default_rng(0).random(2064)  # calibrated; the last batch holds 16 rows
    >>> round(pce(u), 4), round(batch_pce(u), 4)
    (0.0039, 0.0253)
    """
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    return _mean_pce(_runs(pit), p, None, batch_size)


def pce_null_distribution(n, n_sim=10_000, p=1, levels=None, seed=None, batch_size=None):
    """Sampling distribution of the PCE under probabilistic calibration.

    Draws ``n_sim`` samples of ``n`` i.i.d. U(0, 1) PITs and computes
    :func:`~calibtut.metrics.regression.pce` of each. If ``n`` is a sequence
    (one test-set size per run), each simulated value is the average of the
    runs' PCEs: the statistic of [2], which averages 5 splits.

    Parameters
    ----------
    n : int or sequence of int
        Number of PIT values (per run).
    n_sim : int, default 10000
        Monte Carlo samples (10^4 in [2]).
    p : float, default 1
    levels : None, int or array_like
        As in :func:`~calibtut.metrics.regression.pce` (an evaluation grid:
        0 and 1 allowed).
    seed : int, numpy.random.Generator or None
    batch_size : int, optional
        Simulate the per-batch PCE of :func:`batch_pce` with batches of this
        many rows (>= 1) instead of the full-set PCE.

    Returns
    -------
    numpy.ndarray, shape (n_sim,)

    Examples
    --------
    >>> null = pce_null_distribution(100, n_sim=200, seed=0)
    >>> null.shape, bool(0.01 < null.mean() < 0.06)
    ((200,), True)
    """
    sizes = _sizes(n)
    n_sim = check_int(n_sim, "n_sim", minimum=1)
    p = _check_p(p)
    grid = None if levels is None else _grid(levels)
    batch_size = _check_batch_size(batch_size)
    rng = check_rng(seed)
    total = np.zeros(n_sim)
    for size in sizes:
        step = max(1, _CHUNK // size)
        batches = _batches(size, batch_size)
        for start in range(0, n_sim, step):
            stop = min(n_sim, start + step)
            u = rng.random((stop - start, size))
            total[start:stop] += np.mean([_pce_rows(u[:, b], p, grid) for b in batches], axis=0)
    return total / len(sizes)


def pce_test(pit, n_sim=10_000, p=1, levels=None, seed=None, batch_size=None):
    """One-sided Monte Carlo test of probabilistic calibration from PIT values ([2]).

    Parameters
    ----------
    pit : array_like of shape (n,), or a list or tuple of such arrays
        PIT values; with several arrays (runs) the statistic is the mean of
        their PCEs.
    n_sim : int, default 10000
    p : float, default 1
    levels : None, int or array_like
        As in :func:`~calibtut.metrics.regression.pce` (an evaluation grid:
        0 and 1 allowed).
    seed : int, numpy.random.Generator or None
    batch_size : int, optional
        Test the per-batch PCE (:func:`batch_pce`) against its own null, both
        with batches of this many rows (>= 1). Paper 002's code compares the
        per-batch statistic with the full-set null instead:
        ``numpy.mean(pce_null_distribution(n) > batch_pce(pit))``.

    Returns
    -------
    CalibrationTestResult
        ``statistic`` (observed PCE), ``pvalue`` (upper tail) and
        ``null_distribution``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> res = pce_test(rng.random(200) ** 2, n_sim=500, seed=1)  # PITs skewed to 0
    >>> round(res.pvalue, 4)
    0.002
    """
    runs = _runs(pit)
    batch_size = _check_batch_size(batch_size)
    statistic = _mean_pce(runs, p, levels, batch_size)
    null = pce_null_distribution([r.size for r in runs], n_sim, p, levels, seed, batch_size)
    pvalue = (1 + np.sum(null >= statistic)) / (1 + null.size)
    return CalibrationTestResult(statistic, float(pvalue), null)


def ece_test(confidence, correct, n_bins=15, strategy="uniform", closed="right", n_sim=1000, seed=None):
    """Consistency-resampling test of a classifier's calibration using the ECE.

    Under calibration each outcome is Bernoulli(confidence). The null
    distribution of the ECE is simulated by redrawing the outcomes with the
    observed confidences (and therefore the same bins) fixed.

    Parameters
    ----------
    confidence : array_like, shape (n,)
    correct : array_like of {0, 1} or bool, shape (n,)
    n_bins, strategy, closed
        As in :func:`~calibtut.metrics.classification.expected_calibration_error`.
    n_sim : int, default 1000
    seed : int, numpy.random.Generator or None

    Returns
    -------
    CalibrationTestResult

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> conf = rng.uniform(0.5, 1.0, 500)
    >>> res = ece_test(conf, rng.random(500) < conf - 0.2, n_sim=200, seed=1)  # over-confident
    >>> round(res.pvalue, 4)
    0.005
    """
    confidence, correct = _check_confidence_correct(confidence, correct)
    check_choice(closed, "closed", _CLOSED)
    n_sim = check_int(n_sim, "n_sim", minimum=1)
    rng = check_rng(seed)
    statistic = expected_calibration_error(confidence, correct, n_bins, strategy, closed)
    edges = bin_edges(confidence, n_bins, strategy)
    idx = assign_bins(confidence, edges, closed)
    n_b = edges.size - 1
    sum_conf = np.bincount(idx, weights=confidence, minlength=n_b)
    n = confidence.size
    null = np.empty(n_sim)
    step = max(1, _CHUNK // n)
    for start in range(0, n_sim, step):
        stop = min(n_sim, start + step)
        hits = rng.random((stop - start, n)) < confidence
        flat = (idx + n_b * np.arange(stop - start)[:, None]).ravel()
        sum_acc = np.bincount(flat, weights=hits.ravel(), minlength=n_b * (stop - start))
        null[start:stop] = np.abs(sum_acc.reshape(-1, n_b) - sum_conf).sum(axis=1) / n
    # the tolerance absorbs the different summation order of the two ECE computations
    pvalue = (1 + np.sum(null >= statistic - 1e-12)) / (1 + n_sim)
    return CalibrationTestResult(statistic, float(pvalue), null)
