"""Online conformal calibration (Vovk et al. 2020) and the binomial tolerance ``b_delta``.

Conformal calibration keeps the probability integral transforms (PIT)
``p_s = F_s(y_s)`` of past labels under their base forecasts. The calibrated
``alpha_k``-quantile of a new forecast ``F_t`` is ``F_t^{-1}(q_k)``, where
``q_k`` is the ``alpha_k``-quantile of the past PITs.

Reading chosen here (the paper leaves the interpolation open): with ``m`` past
PITs sorted as ``p_(1) <= ... <= p_(m)`` and augmented by ``p_(0) = 0`` and
``p_(m+1) = 1``, the level ``q`` is the linear interpolation of the points
``(i / (m + 1), p_(i))`` at ``alpha_k``. Under exchangeability the rank of a new
PIT among ``m + 1`` is uniform, so ``P(p_new <= p_(i)) = i / (m + 1)``: the knots
are exactly calibrated and the interpolation is the deterministic, continuous
version of Vovk's conformal calibrator. With no past PIT, ``q_k = alpha_k``
(the base forecast itself). The public torchuq code also interpolates
linearly, but feeds the calibrator with labels mapped back through the current
adjustment; here (as in the paper's Section 5) the conformal stage sees the
PIT of each label under the *base* forecast, independently of later stages.

Without a bound ``B`` a quantile forecast's tails continue its outer segments
linearly without end, so a label beyond them gets a "PIT" below 0 or above 1.
Such generalised PITs are still monotone in the label, which is all the
conformal argument needs (ranks), and they keep tail labels distinguishable
instead of tying them at 0 or 1.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from calibtut._validation import as_float_array, check_alpha, check_int
from calibtut.online._base import OnlineCalibrator
from calibtut.online._forecasts import check_online_levels

__all__ = ["ConformalCalibrator", "binomial_tolerance", "conformal_pit_levels", "equally_spaced_levels"]


def equally_spaced_levels(n_levels):
    """The paper's ``K`` equally spaced levels ``k / (K + 1)``.

    Parameters
    ----------
    n_levels : int
        ``K``, the number of levels.

    Returns
    -------
    ndarray of shape (K,)

    Examples
    --------
    >>> equally_spaced_levels(9).round(2).tolist()
    [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    """
    K = check_int(n_levels, "n_levels", minimum=1)
    return np.arange(1, K + 1) / (K + 1)


def _check_delta(delta):
    return check_alpha(delta, "delta")


def binomial_tolerance(n_steps, levels, delta, kind="half"):
    """Tolerances ``b_delta(t) * t`` (in counts) of the oracle's binomial band, for t = 0..n_steps.

    Reading of ``Pr[F_k^T / T in alpha_k +- b_delta(T)] = 1 - delta``: the
    half-width (``kind="half"``) is the smallest symmetric interval around
    ``alpha_k t`` that contains the equal-tailed ``(1 - delta)`` interval
    ``[lo, hi]`` of ``Binomial(t, alpha_k)``. ``kind="full"`` gives
    ``max(hi - lo, 1)``, the tolerance of the public torchuq code. Both are
    made non-decreasing in ``t`` by a running maximum (the proofs of Theorems
    1 and 2 need a non-decreasing ``b_delta(t) t``).

    Parameters
    ----------
    n_steps : int
        Largest ``t``.
    levels : array_like of shape (K,)
    delta : float
        Miscoverage of the band, in (0, 1).
    kind : {"half", "full"}, default "half"

    Returns
    -------
    ndarray of shape (n_steps + 1, K)
        Row ``t`` holds the tolerance at ``t`` for every level (row 0 is zero).

    Examples
    --------
    >>> binomial_tolerance(4, [0.5], 0.1)[:, 0].tolist()
    [0.0, 0.5, 1.0, 1.5, 2.0]
    """
    T = check_int(n_steps, "n_steps", minimum=0)
    a = check_online_levels(levels)
    delta = _check_delta(delta)
    if kind not in ("half", "full"):
        raise ValueError(f"kind must be 'half' or 'full', got {kind!r}")
    t = np.arange(T + 1, dtype=float)[:, None]
    lo = stats.binom.ppf(delta / 2, t, a)
    hi = stats.binom.ppf(1 - delta / 2, t, a)
    width = np.maximum(a * t - lo, hi - a * t) if kind == "half" else np.maximum(hi - lo, 1.0)
    width[0] = 0.0
    return np.maximum.accumulate(width, axis=0)


class ToleranceTable:
    """Cached :func:`binomial_tolerance` for every level, grown on demand.

    Examples
    --------
    >>> ToleranceTable([0.5], 0.1)(3).tolist()
    [1.5]
    """

    def __init__(self, levels, delta, kind="half"):
        self.levels = check_online_levels(levels)
        self.delta = _check_delta(delta)
        self.kind = kind
        self._table = binomial_tolerance(64, self.levels, self.delta, kind)

    def __call__(self, t):
        while t >= len(self._table):
            self._table = binomial_tolerance(2 * len(self._table), self.levels, self.delta, self.kind)
        return self._table[t]


def conformal_pit_levels(sorted_pits, levels):
    """Conformal levels ``q_k``: interpolated ``alpha_k``-quantiles of past PITs.

    Parameters
    ----------
    sorted_pits : array_like of shape (n, m)
        Past PIT values of each series, sorted along the last axis (``m`` may
        be 0). Generalised PITs outside [0, 1] (unbounded quantile forecasts)
        move the end knots to ``min(0, p_(1))`` and ``max(1, p_(m))``.
    levels : array_like of shape (K,) or (n, K)
        Levels in [0, 1] (values outside are clipped), shared or one row per series.

    Returns
    -------
    ndarray of shape (n, K)

    Examples
    --------
    >>> conformal_pit_levels(np.array([[0.2, 0.6, 0.9]]), np.array([0.25, 0.375])).round(3).tolist()
    [[0.2, 0.4]]
    """
    p = as_float_array(sorted_pits, "sorted_pits", ndim=2, allow_empty=True)
    return _interpolate_levels(p, as_float_array(levels, "levels", ndim=(1, 2)))


def _interpolate_levels(p, levels):
    """:func:`conformal_pit_levels` on checked arrays (the calibrators' per-step path)."""
    n, m = p.shape
    a = np.clip(levels, 0.0, 1.0)
    lo = np.minimum(0.0, p[:, :1]) if m else np.zeros((n, 1))
    hi = np.maximum(1.0, p[:, -1:]) if m else np.ones((n, 1))
    aug = np.concatenate([lo, p, hi], axis=1)
    x = a * (m + 1)
    i = np.minimum(np.floor(x).astype(int), m)
    frac = x - i
    if a.ndim == 1:
        return aug[:, i] + frac * (aug[:, i + 1] - aug[:, i])
    left = np.take_along_axis(aug, i, axis=1)
    right = np.take_along_axis(aug, i + 1, axis=1)
    return left + frac * (right - left)


class ConformalCalibrator(OnlineCalibrator):
    """Online conformal calibration of base forecasts (Vovk et al. 2020).

    Parameters
    ----------
    levels : array_like of shape (K,)
        Quantile levels, strictly increasing in (0, 1).
    B : float, optional
        Label bound; padding quantiles ``Z_0 = -B``, ``Z_{K+1} = B`` and outputs in ``[-B, B]``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(1.0, 1.0, size=(1, 200))
    >>> f = np.broadcast_to([-1.0, 0.0, 1.0], (1, 200, 3))
    >>> z = ConformalCalibrator([0.25, 0.5, 0.75], B=10).run(f, y)
    >>> bool(abs(np.mean(y[0, 100:] <= z[0, 100:, 1]) - 0.5) < 0.15)
    True
    """

    def _reset(self, n_series):
        self._pits = np.empty((n_series, 0))

    def conformal_levels(self, levels=None):
        """Current conformal levels ``q`` (shape (n_series, K)) for ``levels`` (default: own levels)."""
        return _interpolate_levels(self._pits, self.levels if levels is None else np.asarray(levels, dtype=float))

    def _predict(self, forecast):
        return forecast.quantile(self.conformal_levels())

    def _update(self, labels, quantiles, forecast):
        self.add_pits(forecast.cdf(labels))

    def add_pits(self, pits):
        """Insert one PIT per series into the sorted history."""
        pits = as_float_array(pits, "pits", ndim=1)
        self._pits = np.sort(np.concatenate([self._pits, pits[:, None]], axis=1), axis=1)
