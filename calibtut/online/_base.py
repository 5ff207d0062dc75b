"""The interface shared by every online calibrator.

The forecaster and nature alternate (paper, Section 2): at step ``t`` the
calibrator sees the base forecasts of a batch of series and answers with
calibrated quantiles (``predict``), then nature reveals the labels
(``update``). ``run`` plays a whole transcript whose labels are known in
advance; it is the same loop, vectorised over the series.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from calibtut._validation import as_float_array, check_distribution, check_int
from calibtut.online._forecasts import (
    StepForecast,
    check_bound,
    check_labels,
    check_online_levels,
    is_distribution,
    slice_distribution,
)


class OnlineCalibrator(ABC):
    """Base class: step-wise ``predict``/``update`` and batch ``run``.

    Parameters
    ----------
    levels : array_like of shape (K,)
        Quantile levels, strictly increasing in (0, 1).
    B : float, optional
        Bound on the labels: every label must lie in ``[-B, B]``.

    Notes
    -----
    Subclasses implement ``_reset(n_series)``, ``_predict(forecast)`` (a
    ``StepForecast`` of the step's base forecasts, returning an
    ``(n_series, K)`` array) and ``_update(labels, quantiles, forecast)``.
    """

    def __init__(self, levels, B=None):
        self.levels = check_online_levels(levels)
        self.B = check_bound(B)
        self.n_series = None
        self._pending = None

    @property
    def n_levels(self):
        """Number of quantile levels ``K``."""
        return len(self.levels)

    def reset(self, n_series=1):
        """Forget every past step and prepare for ``n_series`` parallel series.

        Returns
        -------
        self
        """
        self.n_series = check_int(n_series, "n_series", minimum=1)
        self.t = 0
        self._pending = None
        self._reset(self.n_series)
        return self

    def predict(self, forecast):
        """Calibrated quantiles for the current step.

        Parameters
        ----------
        forecast : array_like of shape (n_series, K) or frozen scipy distribution
            Base quantile forecasts at ``levels`` (non-decreasing along the last
            axis) or a distribution with batch shape ``(n_series,)``.

        Returns
        -------
        ndarray of shape (n_series, K)
        """
        if self.n_series is None:
            n = forecast_batch_size(forecast)
            self.reset(n)
        if self._pending is not None:
            raise RuntimeError("predict was called twice without update: reveal the labels first")
        step = StepForecast(forecast, self.levels, self.B, self.n_series)
        quantiles = self._predict(step)
        self._pending = (step, quantiles)
        return quantiles.copy()

    def update(self, labels):
        """Reveal the labels of the current step.

        Parameters
        ----------
        labels : array_like of shape (n_series,)
            Must lie in ``[-B, B]`` when ``B`` is set.

        Returns
        -------
        self
        """
        if self._pending is None:
            raise RuntimeError("update was called before predict: ask for a forecast first")
        y = check_labels(labels, self.B, (self.n_series,))
        step, quantiles = self._pending
        self._update(y, quantiles, step)
        self._pending = None
        self.t += 1
        return self

    def run(self, forecasts, labels):
        """Calibrate whole transcripts, step by step, vectorised over series.

        Parameters
        ----------
        forecasts : array_like of shape (n_series, T, K) or (T, K), or frozen scipy distribution
            Base quantile forecasts, or a distribution with batch shape
            ``(n_series, T)`` (or ``(T,)``).
        labels : array_like of shape (n_series, T) or (T,)

        Returns
        -------
        ndarray of shape (n_series, T, K) or (T, K)
            The calibrated quantiles; step ``t`` depends only on steps before it.
        """
        single = np.ndim(labels) == 1
        y = as_float_array(labels, "labels", ndim=(1, 2))
        if single:
            y = y[None, :]
        n, T = y.shape
        if is_distribution(forecasts):
            check_distribution(forecasts, "forecasts")
            shape = np.shape(forecasts.ppf(0.5))
            if shape != ((T,) if single else (n, T)):
                raise ValueError(f"forecasts distribution must have batch shape {(T,) if single else (n, T)}, "
                                 f"got {shape}")
            get = _distribution_steps(forecasts, single, n, T)
            whole = forecasts
        else:
            q = as_float_array(forecasts, "forecasts", ndim=(2, 3))
            if single and q.ndim == 3:
                raise ValueError(f"forecasts must have shape (T, K) = ({T}, {self.n_levels}) for 1-d labels, "
                                 f"got {q.shape}")
            if q.ndim == 2:
                q = q[None]
            if q.shape != (n, T, self.n_levels):
                raise ValueError(f"forecasts must have shape (n_series, T, K) = {(n, T, self.n_levels)}, got {q.shape}")
            get = _array_steps(q)
            whole = q
        check_labels(y, self.B, (n, T))
        self.reset(n)
        self.prepare(whole, y)
        out = np.empty((n, T, self.n_levels))
        for t in range(T):
            out[:, t, :] = self.predict(get(t))
            self.update(y[:, t])
        return out[0] if single else out

    def prepare(self, forecasts, labels):
        """Hook called by :meth:`run` before the first step (no-op by default).

        Baselines that are allowed to look at the whole transcript (the
        regret-minimisation baseline's bin range) override it.
        """
        return None

    @abstractmethod
    def _reset(self, n_series):
        """Start ``n_series`` fresh sequences."""

    @abstractmethod
    def _predict(self, forecast):
        """Calibrated quantiles ``(n_series, K)`` for this step's base forecasts."""

    @abstractmethod
    def _update(self, labels, quantiles, forecast):
        """Learn from this step's labels, given what was predicted."""


def _array_steps(q):
    """Step getter for quantile forecasts of shape (n, T, K)."""
    return lambda t: q[:, t, :]


def _distribution_steps(dist, single, n, T):
    """Step getter for a distribution with batch shape ``(n, T)`` or ``(T,)``."""
    if not single:
        return lambda t: slice_distribution(dist, t, (n, T))

    def get(t):
        def take(a):
            arr = np.asarray(a, dtype=float)
            return np.broadcast_to(arr, (T,))[t:t + 1] if arr.ndim else arr

        return dist.dist(*[take(a) for a in dist.args], **{k: take(v) for k, v in dist.kwds.items()})

    return get


def forecast_batch_size(forecast):
    """Number of series in one step of forecasts.

    Examples
    --------
    >>> forecast_batch_size(np.zeros((3, 2)))
    3
    """
    if is_distribution(forecast):
        return int(np.shape(forecast.ppf(0.5))[0])
    q = as_float_array(forecast, "forecast", ndim=2)
    return q.shape[0]
