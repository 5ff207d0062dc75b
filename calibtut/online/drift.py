"""Synthetic drifting streams of the paper: Figure 1, Eq. (44) and the four benchmark drifts.

Every generator returns a :class:`DriftStream` holding base quantile forecasts
``(n_series, T, K)``, labels ``(n_series, T)``, the levels, the true conditional
quantiles and a bound ``B`` on labels and forecasts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from calibtut._validation import as_float_array, check_int, check_real, check_rng
from calibtut.online._forecasts import check_online_levels
from calibtut.online.conformal import equally_spaced_levels

__all__ = [
    "DriftStream",
    "PAPER_DRIFT_BETA",
    "apply_drift",
    "drift_offsets",
    "drifting_gaussian_stream",
    "figure1_stream",
    "synthetic_tasks",
]

PAPER_DRIFT_BETA = {"linear_shift": 0.1, "scale_shift": 1.0, "jump": 3.0, "cycle": 3.0}
"""Drift coefficients of Appendix C for the regression benchmarks."""


@dataclass(frozen=True)
class DriftStream:
    """A batch of transcripts: base forecasts, labels and the truth.

    Attributes
    ----------
    forecasts : ndarray of shape (n_series, T, K)
    labels : ndarray of shape (n_series, T)
    levels : ndarray of shape (K,)
    true_quantiles : ndarray of shape (n_series, T, K)
        Conditional quantiles of the label law at each step.
    B : float
        Bound on labels and forecasts (by construction, or the smallest integer
        bounding the generated values).
    """

    forecasts: np.ndarray
    labels: np.ndarray
    levels: np.ndarray
    true_quantiles: np.ndarray
    B: float


def _levels(levels):
    return equally_spaced_levels(9) if levels is None else check_online_levels(levels)


def _integer_bound(*arrays):
    return float(np.ceil(max(np.max(np.abs(a)) for a in arrays) + 1e-9))


def figure1_stream(n_steps=60, *, n_series=1, levels=None, change_step=5, seed=None):
    """The stream of the paper's Figure 1: Uniform[-2, 2] drifting to Uniform[-5, -1].

    Labels are drawn from Uniform[-2, 2] for steps ``t < change_step`` (0-based)
    and from Uniform[-5, -1] afterwards; the base forecast keeps predicting the
    quantiles of Uniform[-2, 2]. ``B = 5``.

    Parameters
    ----------
    n_steps : int, default 60
    n_series : int, default 1
    levels : array_like, optional
        Defaults to the nine levels 0.1, ..., 0.9.
    change_step : int, default 5
    seed : int, Generator or None

    Returns
    -------
    DriftStream

    Examples
    --------
    >>> s = figure1_stream(n_steps=10, seed=0)
    >>> s.labels.shape, s.forecasts.shape, s.B
    ((1, 10), (1, 10, 9), 5.0)
    """
    T = check_int(n_steps, "n_steps", minimum=1)
    n = check_int(n_series, "n_series", minimum=1)
    c = check_int(change_step, "change_step", minimum=0)
    a = _levels(levels)
    rng = check_rng(seed)
    lo = np.where(np.arange(T) < c, -2.0, -5.0)
    u = rng.uniform(size=(n, T))
    labels = lo + 4.0 * u
    true = np.broadcast_to(lo[None, :, None] + 4.0 * a, (n, T, len(a))).copy()
    forecasts = np.broadcast_to(-2.0 + 4.0 * a, (n, T, len(a))).copy()
    return DriftStream(forecasts, labels, a, true, 5.0)


def synthetic_tasks(n_series, n_steps, *, levels=None, seed=None):
    """The tuning tasks of Eq. (44): ``Y_t = a + b eps_t`` with a standard normal forecast.

    Per series ``a ~ N(0, 1)`` and ``b ~ U(0, 1)``; ``eps_t ~ N(0, 1)``; the base
    forecast is ``Z_k = Phi^{-1}(alpha_k)`` at every step.

    Parameters
    ----------
    n_series, n_steps : int
    levels : array_like, optional
    seed : int, Generator or None

    Returns
    -------
    DriftStream

    Examples
    --------
    >>> s = synthetic_tasks(3, 20, seed=0)
    >>> s.labels.shape, bool(np.all(np.abs(s.labels) <= s.B))
    ((3, 20), True)
    """
    n = check_int(n_series, "n_series", minimum=1)
    T = check_int(n_steps, "n_steps", minimum=1)
    a_lv = _levels(levels)
    rng = check_rng(seed)
    a = rng.normal(size=(n, 1))
    b = rng.uniform(size=(n, 1))
    labels = a + b * rng.normal(size=(n, T))
    z = stats.norm.ppf(a_lv)
    forecasts = np.broadcast_to(z, (n, T, len(a_lv))).copy()
    true = np.broadcast_to((a + b * z)[:, None, :], (n, T, len(a_lv))).copy()
    return DriftStream(forecasts, labels, a_lv, true, _integer_bound(labels, forecasts))


def drift_offsets(n_steps, kind, beta=None):
    """Shift and scale of the four benchmark drifts (Appendix C), for t = 1..T.

    The drifted label is ``scale_t * Y_t + shift_t``:

    * ``"linear_shift"``: ``Y_t + beta t``;
    * ``"scale_shift"``: ``Y_t (1 + beta sqrt(t))``;
    * ``"jump"``: ``Y_t + beta`` for ``t >= T / 2``;
    * ``"cycle"``: ``Y_t + beta sin(2 pi t / T)``.

    Parameters
    ----------
    n_steps : int
    kind : {"linear_shift", "scale_shift", "jump", "cycle"}
    beta : float, optional
        Size of the drift, >= 0 (its direction is part of ``kind``). Defaults
        to the paper's value (:data:`PAPER_DRIFT_BETA`).

    Returns
    -------
    shift, scale : ndarray of shape (T,)

    Examples
    --------
    >>> shift, scale = drift_offsets(4, "jump")
    >>> shift.tolist(), scale.tolist()
    ([0.0, 3.0, 3.0, 3.0], [1.0, 1.0, 1.0, 1.0])
    """
    T = check_int(n_steps, "n_steps", minimum=1)
    if kind not in PAPER_DRIFT_BETA:
        raise ValueError(f"kind must be one of {sorted(PAPER_DRIFT_BETA)}, got {kind!r}")
    beta = PAPER_DRIFT_BETA[kind] if beta is None else check_real(beta, "beta", low=0)
    t = np.arange(1, T + 1, dtype=float)
    shift = np.zeros(T)
    scale = np.ones(T)
    if kind == "linear_shift":
        shift = beta * t
    elif kind == "scale_shift":
        scale = 1.0 + beta * np.sqrt(t)
    elif kind == "jump":
        shift = np.where(t >= T / 2, beta, 0.0)
    else:
        shift = beta * np.sin(2 * np.pi * t / T)
    return shift, scale


def apply_drift(labels, kind, beta=None):
    """Apply one of the four benchmark drifts to label sequences (time on the last axis).

    Parameters
    ----------
    labels : array_like of shape (..., T)
    kind : {"linear_shift", "scale_shift", "jump", "cycle"}
    beta : float, optional
        Defaults to the paper's value.

    Returns
    -------
    ndarray of the shape of ``labels``

    Examples
    --------
    >>> apply_drift([1.0, 1.0, 1.0, 1.0], "linear_shift").round(2).tolist()
    [1.1, 1.2, 1.3, 1.4]
    """
    y = as_float_array(labels, "labels", min_ndim=1)
    shift, scale = drift_offsets(y.shape[-1], kind, beta)
    return y * scale + shift


def drifting_gaussian_stream(kind, n_series, n_steps, *, levels=None, beta=None, seed=None):
    """I.i.d. standard normal labels under a benchmark drift, with the undrifted normal forecast.

    Parameters
    ----------
    kind : {"linear_shift", "scale_shift", "jump", "cycle"}
    n_series, n_steps : int
    levels : array_like, optional
    beta : float, optional
        Defaults to the paper's value for ``kind``.
    seed : int, Generator or None

    Returns
    -------
    DriftStream

    Examples
    --------
    >>> s = drifting_gaussian_stream("jump", 2, 100, seed=0)
    >>> bool(s.labels[:, 60:].mean() > 2)
    True
    """
    n = check_int(n_series, "n_series", minimum=1)
    T = check_int(n_steps, "n_steps", minimum=1)
    a_lv = _levels(levels)
    rng = check_rng(seed)
    shift, scale = drift_offsets(T, kind, beta)
    labels = rng.normal(size=(n, T)) * scale + shift
    z = stats.norm.ppf(a_lv)
    forecasts = np.broadcast_to(z, (n, T, len(a_lv))).copy()
    true = np.broadcast_to(scale[:, None] * z + shift[:, None], (n, T, len(a_lv))).copy()
    return DriftStream(forecasts, labels, a_lv, true, _integer_bound(labels, forecasts))
