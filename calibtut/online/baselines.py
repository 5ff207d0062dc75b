"""Baselines behind the same interface: original forecasts, regret minimisation, ACI.

Conformal calibration alone is :class:`~calibtut.online.conformal.ConformalCalibrator`.
"""

from __future__ import annotations

import numpy as np

from calibtut._validation import as_float_array, check_int, check_real, check_rng
from calibtut.online._base import OnlineCalibrator
from calibtut.online._forecasts import is_distribution
from calibtut.online.conformal import ConformalCalibrator, _interpolate_levels

__all__ = ["ACICalibrator", "OriginalForecast", "RegretCalibrator"]


class OriginalForecast(OnlineCalibrator):
    """The base forecasts themselves (clipped to ``[-B, B]`` when ``B`` is given).

    Examples
    --------
    >>> OriginalForecast([0.5]).run([[1.0], [2.0]], [0.0, 0.0]).tolist()
    [[1.0], [2.0]]
    """

    def _reset(self, n_series):
        return None

    def _predict(self, forecast):
        return forecast.base_quantiles()

    def _update(self, labels, quantiles, forecast):
        return None


class RegretCalibrator(OnlineCalibrator):
    """Internal-regret recalibration of each quantile (Kuleshov & Ermon 2017, as in Appendix C.2).

    For each level ``k`` a separate instance bins the base forecast ``Z~_k``
    into ``n_bins`` equal bins of ``[lower, upper]``. Each bin runs a
    forecaster over the grid of ``n_bins + 1`` equally spaced points of
    ``[lower, upper]`` that minimises internal regret under the pinball loss
    of level ``alpha_k`` (scaled by ``upper - lower`` into [0, 1]): the
    reduction of Stoltz & Lugosi / Blum & Mansour, with exponential weights on
    the ``G (G - 1)`` "play j instead of i" experts and the played
    distribution the stationary vector of the induced Markov matrix. The
    learning rate of a bin after ``n`` visits is ``sqrt(8 log(G (G - 1)) / n)``.

    Parameters
    ----------
    levels : array_like of shape (K,)
    B : float, optional
        Label bound (checked on the labels only).
    lower, upper : float or array_like of shape (n_series,), optional
        Range of the bins and grid. When left out, :meth:`run` takes the
        smallest and largest value among the labels and forecasts of each
        series, widened by 10% of the range on each side: the "unfair
        advantage" the paper gives this baseline (it sees the whole sequence).
    n_bins : int, default 10
    randomized : bool, default True
        Draw the output from the played distribution (the algorithm);
        otherwise output its mean.
    seed : int, Generator or None

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(size=(2, 50))
    >>> f = np.broadcast_to([-0.7, 0.0, 0.7], (2, 50, 3))
    >>> RegretCalibrator([0.25, 0.5, 0.75], seed=0).run(f, y).shape
    (2, 50, 3)
    """

    def __init__(self, levels, B=None, *, lower=None, upper=None, n_bins=10, randomized=True, seed=None):
        super().__init__(levels, B)
        self.n_bins = check_int(n_bins, "n_bins", minimum=1)
        if (lower is None) != (upper is None):
            raise ValueError("give both lower and upper, or neither")
        if lower is not None:
            lower = as_float_array(lower, "lower", ndim=(0, 1))
            upper = as_float_array(upper, "upper", ndim=(0, 1))
            if np.any(np.broadcast_arrays(lower, upper)[0] >= upper):
                raise ValueError(f"lower must be < upper, got lower={lower.tolist()} and upper={upper.tolist()}")
        self.lower = lower
        self.upper = upper
        self.randomized = bool(randomized)
        self.seed = seed
        self._range = None

    def prepare(self, forecasts, labels):
        if self.lower is not None:
            self._range = None
            return
        if is_distribution(forecasts):
            q = np.stack([np.asarray(forecasts.ppf(a), dtype=float) for a in self.levels], axis=-1)
            q = q.reshape(labels.shape + (self.n_levels,))
        else:
            q = forecasts
        lo = np.minimum(labels.min(axis=1), q.min(axis=(1, 2)))
        hi = np.maximum(labels.max(axis=1), q.max(axis=(1, 2)))
        span = np.where(hi > lo, hi - lo, 1.0)
        self._range = (lo - 0.1 * span, hi + 0.1 * span)
        self._set_range(*self._range)

    def _set_range(self, lower, upper):
        n = self.n_series
        lo = np.broadcast_to(np.asarray(lower, dtype=float), (n,)).copy()
        hi = np.broadcast_to(np.asarray(upper, dtype=float), (n,)).copy()
        if np.any(~np.isfinite(lo)) or np.any(~np.isfinite(hi)) or np.any(hi <= lo):
            raise ValueError("lower and upper must be finite with lower < upper")
        self._lo, self._hi = lo, hi
        G = self.n_bins + 1
        self._grid = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, G)

    def _reset(self, n_series):
        G = self.n_bins + 1
        self._rng = check_rng(self.seed)
        self._regret = np.zeros((n_series, self.n_levels, self.n_bins, G, G))
        self._visits = np.zeros((n_series, self.n_levels, self.n_bins))
        self._lo = None
        if self.lower is not None:
            self._set_range(self.lower, self.upper)

    def _distribution(self, regret, visits):
        """Stationary distribution of the internal-regret experts' Markov matrix."""
        G = regret.shape[-1]
        rate = np.sqrt(8 * np.log(max(G * (G - 1), 2)) / np.maximum(visits, 1.0))
        off = ~np.eye(G, dtype=bool)
        score = np.where(off, rate[..., None, None] * regret, -np.inf)
        score = score - score.max(axis=(-2, -1), keepdims=True)
        w = np.exp(score)
        w /= w.sum(axis=(-2, -1), keepdims=True)
        markov = w + np.eye(G) * (1.0 - w.sum(axis=-1))[..., None]
        system = np.swapaxes(markov, -1, -2) - np.eye(G)
        system[..., -1, :] = 1.0
        rhs = np.zeros(regret.shape[:-1])
        rhs[..., -1] = 1.0
        p = np.linalg.solve(system, rhs[..., None])[..., 0]
        p = np.clip(p, 0.0, None)
        return p / p.sum(axis=-1, keepdims=True)

    def _predict(self, forecast):
        if self._lo is None:
            raise RuntimeError("RegretCalibrator needs lower and upper for step-wise use (run() infers them)")
        base = forecast.base_quantiles()
        n = self.n_series
        pos = (base - self._lo[:, None]) / (self._hi - self._lo)[:, None]
        bins = np.clip(np.floor(pos * self.n_bins).astype(int), 0, self.n_bins - 1)
        idx = (np.arange(n)[:, None], np.arange(self.n_levels)[None, :], bins)
        p = self._distribution(self._regret[idx], self._visits[idx])
        if self.randomized:
            u = self._rng.uniform(size=(n, self.n_levels, 1))
            choice = np.minimum(np.sum(np.cumsum(p, axis=-1) < u, axis=-1), p.shape[-1] - 1)
            out = np.take_along_axis(self._grid, choice, axis=1)
        else:
            out = np.einsum("nkg,ng->nk", p, self._grid)
        self._step = (idx, p)
        return out

    def _update(self, labels, quantiles, forecast):
        idx, p = self._step
        diff = labels[:, None, None] - self._grid[:, None, :]
        a = self.levels[None, :, None]
        loss = np.maximum(a * diff, (a - 1) * diff) / (self._hi - self._lo)[:, None, None]
        self._regret[idx] += p[..., :, None] * (loss[..., :, None] - loss[..., None, :])
        self._visits[idx] += 1


class ACICalibrator(OnlineCalibrator):
    """Adaptive Conformal Inference (Gibbs & Candes 2021), one level at a time.

    Each level ``alpha_k`` keeps its own working level ``a_k``, updated after
    each label by ``a_k <- a_k + gamma (alpha_k - 1[Y <= Z_k])``, and outputs
    the conformally calibrated quantile at ``a_k`` (``-B`` when ``a_k <= 0``,
    ``B`` when ``a_k >= 1``). For any label sequence in ``(-B, B)`` this gives
    ``|F_k^T / T - alpha_k| <= (max(alpha_k, 1 - alpha_k) + gamma) / (gamma T)``.
    Levels are tracked independently, so quantiles can cross.

    Parameters
    ----------
    levels : array_like of shape (K,)
    B : float, optional
    gamma : float, default 0.005
        Step size (the value used by Gibbs & Candes).
    conformal : bool, default True
        Apply the working levels to the conformal calibrator (otherwise to the base forecast).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(2.0, 1.0, size=(1, 400))
    >>> f = np.broadcast_to([-0.67, 0.0, 0.67], (1, 400, 3))
    >>> z = ACICalibrator([0.25, 0.5, 0.75], B=10, gamma=0.05).run(f, y)
    >>> bool(abs(np.mean(y <= z[..., 1]) - 0.5) <= (0.5 + 0.05) / (0.05 * 400))
    True
    """

    def __init__(self, levels, B=None, *, gamma=0.005, conformal=True):
        super().__init__(levels, B)
        self.gamma = check_real(gamma, "gamma", low=0, low_open=True)
        self.conformal = bool(conformal)

    def _reset(self, n_series):
        self.working_levels = np.broadcast_to(self.levels, (n_series, self.n_levels)).copy()
        self._stage = ConformalCalibrator(self.levels, self.B).reset(n_series) if self.conformal else None

    def _predict(self, forecast):
        u = np.clip(self.working_levels, 0.0, 1.0)
        if self._stage is not None:
            u = _interpolate_levels(self._stage._pits, u)
        return forecast.quantile(u)

    def _update(self, labels, quantiles, forecast):
        self.working_levels += self.gamma * (self.levels - (labels[:, None] <= quantiles))
        if self._stage is not None:
            self._stage._update(labels, None, forecast)
