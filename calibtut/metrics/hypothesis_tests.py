"""Monte Carlo tests of calibration.

* :func:`pce_test`: the simulation test of probabilistic calibration of [2]
  (Section 4 and Appendix B.5): the PCE of observed PITs is compared with its
  sampling distribution under uniform PITs of the same size.
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

from calibtut._validation import check_int, check_rng
from calibtut.metrics.classification import (
    _CLOSED,
    _check_choice,
    _check_confidence_correct,
    assign_bins,
    bin_edges,
    expected_calibration_error,
)
from calibtut.metrics.regression import _check_p, _grid, check_pit, pce

__all__ = ["CalibrationTestResult", "pce_null_distribution", "pce_test", "ece_test"]

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


def pce_null_distribution(n, n_sim=10_000, p=1, levels=None, seed=None):
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
    rng = check_rng(seed)
    total = np.zeros(n_sim)
    for size in sizes:
        step = max(1, _CHUNK // size)
        for start in range(0, n_sim, step):
            stop = min(n_sim, start + step)
            total[start:stop] += _pce_rows(rng.random((stop - start, size)), p, grid)
    return total / len(sizes)


def pce_test(pit, n_sim=10_000, p=1, levels=None, seed=None):
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
    if isinstance(pit, (list, tuple)) and len(pit) > 0 and np.ndim(pit[0]) == 1:
        runs = [check_pit(r) for r in pit]
    else:
        runs = [check_pit(pit)]
    statistic = float(np.mean([pce(r, p, levels) for r in runs]))
    null = pce_null_distribution([r.size for r in runs], n_sim, p, levels, seed)
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
    _check_choice(closed, "closed", _CLOSED)
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
