"""Base forecasts as the online calibrators see them: quantile vectors or CDFs.

A quantile forecast at ``K`` levels is extended to a whole quantile function by
two padding quantiles at levels 0 and 1 (the paper's ``Z_0 = -B`` and
``Z_{K+1} = B``) and linear interpolation between knots. Without a bound ``B``
the padding quantiles continue the outer segments linearly to levels 0 and 1.
A CDF forecast is a frozen ``scipy.stats`` distribution whose parameters have
the batch shape; its ``cdf`` and ``ppf`` are used directly.
"""

from __future__ import annotations

import numbers

import numpy as np

from calibtut._validation import as_float_array, check_distribution, check_levels


def check_bound(B):
    """Return the label bound ``B`` as a positive float, or None.

    Examples
    --------
    >>> check_bound(5)
    5.0
    """
    if B is None:
        return None
    if isinstance(B, bool) or not isinstance(B, numbers.Real):
        raise TypeError(f"B must be a positive real number or None, got {B!r} ({type(B).__name__})")
    B = float(B)
    if not np.isfinite(B) or B <= 0:
        raise ValueError(f"B must be a positive finite number, got {B}")
    return B


def check_online_levels(levels):
    """Check quantile levels for the online calibrators (1-d, increasing, in (0, 1)).

    Examples
    --------
    >>> check_online_levels([0.25, 0.75])
    array([0.25, 0.75])
    """
    return check_levels(levels, "levels")


def check_labels(labels, B, shape, name="labels"):
    """Check labels: finite, of the given shape, and inside ``[-B, B]`` if ``B`` is given.

    Examples
    --------
    >>> check_labels([0.5, -1.0], 2.0, (2,))
    array([ 0.5, -1. ])
    """
    y = as_float_array(labels, name)
    if y.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {y.shape}")
    if B is not None and np.any(np.abs(y) > B):
        raise ValueError(f"{name} must lie in [-B, B] = [{-B}, {B}], found {float(np.max(np.abs(y)))}")
    return y


def is_distribution(obj):
    """Whether ``obj`` looks like a frozen scipy distribution (has ``cdf`` and ``ppf``).

    Examples
    --------
    >>> from scipy import stats
    >>> is_distribution(stats.norm()), is_distribution([0.0])
    (True, False)
    """
    return callable(getattr(obj, "cdf", None)) and callable(getattr(obj, "ppf", None))


def pad_quantiles(quantiles, levels, B):
    """Add the padding quantiles at levels 0 and 1.

    Parameters
    ----------
    quantiles : ndarray of shape (n, K)
        Non-decreasing quantile vectors.
    levels : ndarray of shape (K,)
    B : float or None
        With ``B`` the padding is ``-B`` and ``B`` (the quantiles are clipped to
        ``[-B, B]`` first); without it the outer segments are continued linearly
        (a single level is padded by a unit slope).

    Returns
    -------
    knots : ndarray of shape (n, K + 2)
    knot_levels : ndarray of shape (K + 2,)

    Examples
    --------
    >>> knots, lv = pad_quantiles(np.array([[-1.0, 1.0]]), np.array([0.25, 0.75]), 2.0)
    >>> knots.tolist(), lv.tolist()
    ([[-2.0, -1.0, 1.0, 2.0]], [0.0, 0.25, 0.75, 1.0])
    """
    q = np.asarray(quantiles, dtype=float)
    n = q.shape[0]
    knot_levels = np.concatenate([[0.0], levels, [1.0]])
    if B is not None:
        q = np.clip(q, -B, B)
        lo = np.full((n, 1), -B)
        hi = np.full((n, 1), B)
    elif len(levels) == 1:
        lo = q[:, :1] - levels[0]
        hi = q[:, -1:] + (1 - levels[-1])
    else:
        slope_lo = (q[:, 1:2] - q[:, :1]) / (levels[1] - levels[0])
        slope_hi = (q[:, -1:] - q[:, -2:-1]) / (levels[-1] - levels[-2])
        lo = q[:, :1] - levels[0] * slope_lo
        hi = q[:, -1:] + (1 - levels[-1]) * slope_hi
    return np.concatenate([lo, q, hi], axis=1), knot_levels


def interp_quantile(knots, knot_levels, u, extrapolate=False):
    """Evaluate piecewise-linear quantile functions row by row.

    Parameters
    ----------
    knots : ndarray of shape (n, J)
        Non-decreasing knot values, one row per forecast.
    knot_levels : ndarray of shape (J,)
        Increasing levels from 0 to 1 shared by every row.
    u : ndarray of shape (n, m)
        Levels at which to evaluate, clipped to [0, 1] unless ``extrapolate``.
    extrapolate : bool, default False
        Continue the first and last segments linearly beyond levels 0 and 1.

    Returns
    -------
    ndarray of shape (n, m)

    Examples
    --------
    >>> interp_quantile(np.array([[-2.0, 0.0, 2.0]]), np.array([0.0, 0.5, 1.0]), np.array([[0.25, 1.0]])).tolist()
    [[-1.0, 2.0]]
    """
    if not extrapolate:
        u = np.clip(u, 0.0, 1.0)
    j = np.clip(np.searchsorted(knot_levels, u, side="right"), 1, len(knot_levels) - 1)
    l0, l1 = knot_levels[j - 1], knot_levels[j]
    x0 = np.take_along_axis(knots, j - 1, axis=1)
    x1 = np.take_along_axis(knots, j, axis=1)
    return x0 + (u - l0) / (l1 - l0) * (x1 - x0)


def interp_cdf(knots, knot_levels, y, extrapolate=False):
    """Right-continuous CDF of the piecewise-linear quantile functions at ``y``.

    Parameters
    ----------
    knots : ndarray of shape (n, J)
    knot_levels : ndarray of shape (J,)
    y : ndarray of shape (n,)
    extrapolate : bool, default False
        Continue the outer segments linearly (values may leave [0, 1]: a
        generalised PIT, still monotone in ``y``, for forecasts without a bound).

    Returns
    -------
    ndarray of shape (n,)
        Values in [0, 1] (0 below the first knot, 1 at or above the last) unless ``extrapolate``.

    Examples
    --------
    >>> interp_cdf(np.array([[-2.0, 0.0, 2.0]]), np.array([0.0, 0.5, 1.0]), np.array([1.0])).tolist()
    [0.75]
    """
    n_knots = knots.shape[1]
    j = np.clip(np.sum(knots <= y[:, None], axis=1), 1, n_knots - 1)
    x0 = np.take_along_axis(knots, (j - 1)[:, None], axis=1)[:, 0]
    x1 = np.take_along_axis(knots, j[:, None], axis=1)[:, 0]
    l0, l1 = knot_levels[j - 1], knot_levels[j]
    width = x1 - x0
    frac = np.divide(y - x0, width, out=np.ones_like(y), where=width > 0)
    if extrapolate:
        inner = (j > 1) & (j < n_knots - 1)
        frac = np.where(inner | (width <= 0), np.clip(frac, 0.0, 1.0), frac)
        return l0 + frac * (l1 - l0)
    return np.clip(l0 + np.clip(frac, 0.0, 1.0) * (l1 - l0), 0.0, 1.0)


class StepForecast:
    """One time step of base forecasts for a batch of series.

    Parameters
    ----------
    forecast : ndarray of shape (n, K) or frozen scipy distribution
        Quantile vectors at ``levels`` or a distribution with batch shape ``(n,)``.
    levels : ndarray of shape (K,)
    B : float or None
    n_series : int or None
        Expected batch size (checked when given).

    Examples
    --------
    >>> f = StepForecast(np.array([[-1.0, 1.0]]), np.array([0.25, 0.75]), 2.0)
    >>> f.quantile(np.array([[0.5]])).tolist(), f.cdf(np.array([1.0])).tolist()
    ([[0.0]], [0.75])
    """

    def __init__(self, forecast, levels, B, n_series=None):
        self.levels = levels
        self.B = B
        if is_distribution(forecast):
            self.dist = check_distribution(forecast, "forecast")
            probe = np.asarray(forecast.ppf(0.5), dtype=float)
            if probe.ndim != 1:
                raise ValueError(f"forecast distribution must have batch shape (n_series,), got {probe.shape}")
            self.n = probe.shape[0]
            self.knots = None
        else:
            q = as_float_array(forecast, "forecast", ndim=2)
            if q.shape[1] != len(levels):
                raise ValueError(f"forecast must have {len(levels)} quantiles per row (one per level), "
                                 f"got shape {q.shape}")
            if np.any(np.diff(q, axis=1) < 0):
                raise ValueError("forecast quantiles must be non-decreasing along the last axis (found a crossing)")
            self.dist = None
            self.n = q.shape[0]
            self.knots, self.knot_levels = pad_quantiles(q, levels, B)
        if n_series is not None and self.n != n_series:
            raise ValueError(f"forecast has {self.n} series but the calibrator was reset for {n_series}")

    def quantile(self, u):
        """Quantile function at levels ``u`` of shape (n, m), inside ``[-B, B]``.

        Without ``B`` a quantile forecast's tails continue linearly, also
        beyond levels 0 and 1 (where the conformal levels may fall).
        """
        if self.dist is None:
            return interp_quantile(self.knots, self.knot_levels, u, extrapolate=self.B is None)
        u = np.clip(u, 0.0, 1.0)
        out = np.stack([np.asarray(self.dist.ppf(u[:, j]), dtype=float) for j in range(u.shape[1])], axis=1)
        if self.B is not None:
            out = np.clip(out, -self.B, self.B)
        elif not np.all(np.isfinite(out)):
            raise ValueError("a CDF forecast with unbounded support needs B (ppf returned inf at level 0 or 1)")
        return out

    def cdf(self, y):
        """CDF (PIT) of labels ``y`` of shape (n,) (a generalised PIT outside [0, 1] for unbounded quantile
        forecasts)."""
        if self.dist is None:
            return interp_cdf(self.knots, self.knot_levels, y, extrapolate=self.B is None)
        return np.clip(np.asarray(self.dist.cdf(y), dtype=float), 0.0, 1.0)

    def base_quantiles(self):
        """The forecast's own quantiles at ``levels``, shape (n, K)."""
        if self.dist is None:
            return self.knots[:, 1:-1].copy()
        return self.quantile(np.broadcast_to(self.levels, (self.n, len(self.levels))))


def slice_distribution(dist, t, batch_shape):
    """Freeze the time-``t`` slice of a distribution with batch shape ``(n, T)``.

    Examples
    --------
    >>> from scipy import stats
    >>> d = slice_distribution(stats.norm(np.zeros((2, 3)), np.arange(1.0, 4.0)), 1, (2, 3))
    >>> d.std().tolist()
    [2.0, 2.0]
    """
    def take(a):
        arr = np.asarray(a, dtype=float)
        return np.broadcast_to(arr, batch_shape)[:, t] if arr.ndim else arr

    args = [take(a) for a in dist.args]
    kwds = {k: take(v) for k, v in dist.kwds.items()}
    return dist.dist(*args, **kwds)
