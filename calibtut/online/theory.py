"""Theorem 2 and Corollary 1 checked on transcripts, and an adaptive adversarial nature.

Theorem 2 of the drift paper (springs) and its Corollary 1 (springs + PID)
bound the calibration error of a transcript in counts,
``max_k |F_k^T - alpha_k T| <= K (2 h(T) + c)`` with ``h(T) = b_delta(T) T``,
on every transcript whose "likelihood" (Eq. 5) stays below
``(exp(beta (c - 1) / 2) - m B) / (2 eta B (K + 1))`` up to ``T``, where
``m = 4`` for Theorem 2 and ``m = 6`` for Corollary 1 (the clipped PID terms
move a force difference by at most ``2B``). Read backwards, the running
maximum ``L*_T`` of the likelihood gives the smallest admissible

``c_T = max(2 / beta, 1 + 2 / beta * log(2 eta B (K + 1) L*_T + m B))``

and the bound ``K (2 h(T) + c_T)`` must hold at every ``T``. ``h(T)`` is taken
as the largest tolerance over the levels (:func:`~calibtut.online.conformal.binomial_tolerance`).

:func:`adversarial_labels` plays the causal protocol against a calibrator and
chooses every label after seeing the forecast.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from calibtut._validation import as_float_array, check_int, check_positive
from calibtut.online._base import OnlineCalibrator
from calibtut.online._forecasts import check_bound
from calibtut.online.conformal import _check_delta, binomial_tolerance
from calibtut.online.metrics import _check

__all__ = [
    "COROLLARY1_MARGIN",
    "SpringBoundCheck",
    "THEOREM2_MARGIN",
    "admissible_c",
    "adversarial_labels",
    "count_deviation",
    "interval_likelihood",
    "spring_bound_check",
]

THEOREM2_MARGIN = 4.0
"""The ``4B`` of Theorem 2's likelihood condition (in units of ``B``)."""

COROLLARY1_MARGIN = 6.0
"""The ``6B`` of Corollary 1's likelihood condition (PID with ``kp = 1``)."""

ADVERSARY_STRATEGIES = ("greedy", "above", "below", "median")

MEDIAN_OFFSET = 1e-3
"""Offset of the ``"median"`` adversary's labels, as a fraction of the smaller gap next to the central quantile."""


def _require_bound(B):
    B = check_bound(B)
    if B is None:
        raise ValueError("B is required: the likelihood and the bounds pad the quantiles with -B and B")
    return B


def interval_likelihood(y, quantiles, levels, B):
    """The "likelihood" of Eq. (5): level mass over the width of the interval holding the label.

    With the padding ``Z_0 = -B``, ``Z_{K+1} = B``, ``alpha_0 = 0``,
    ``alpha_{K+1} = 1``, ``L^t = (alpha_{k+1} - alpha_k) / (Z_{k+1}^t - Z_k^t)``
    for the ``k`` with ``Y^t`` in ``[Z_k^t, Z_{k+1}^t)``; a label equal to
    ``B`` falls in the last interval ``[Z_K^t, B]``.

    Parameters
    ----------
    y : array_like of shape (..., T)
        Labels in ``[-B, B]``.
    quantiles : array_like of shape (..., T, K)
        Output quantiles, strictly increasing inside ``(-B, B)``.
    levels : array_like of shape (K,)
    B : float
        Label bound.

    Returns
    -------
    ndarray of shape (..., T)

    Examples
    --------
    >>> interval_likelihood([0.5], [[-1.0, 1.0]], [0.25, 0.75], B=2.0).tolist()
    [0.25]
    """
    y, q, a = _check(y, quantiles, levels)
    B = _require_bound(B)
    if np.any(np.abs(y) > B):
        raise ValueError(f"y must lie in [-B, B] = [{-B}, {B}]")
    pad = np.full(q.shape[:-1] + (1,), B)
    knots = np.concatenate([-pad, q, pad], axis=-1)
    widths = np.diff(knots, axis=-1)
    if np.any(widths <= 0):
        raise ValueError("quantiles must be strictly increasing and strictly inside (-B, B)")
    mass = np.diff(np.concatenate([[0.0], a, [1.0]]))
    k = np.clip((knots <= y[..., None]).sum(axis=-1) - 1, 0, len(a))
    width = np.take_along_axis(widths, k[..., None], axis=-1)[..., 0]
    return mass[k] / width


def count_deviation(y, quantiles, levels):
    """``|F_k^t - alpha_k t|`` in counts after every step ``t = 1..T``, per level.

    Parameters
    ----------
    y, quantiles, levels : array_like
        Shapes (..., T), (..., T, K) and (K,), as in
        :func:`~calibtut.online.metrics.empirical_frequencies`.

    Returns
    -------
    ndarray of shape (..., T, K)

    Examples
    --------
    >>> count_deviation([0.0, 2.0], [[1.0], [1.0]], [0.5])[:, 0].tolist()
    [0.5, 0.0]
    """
    y, q, a = _check(y, quantiles, levels)
    F = np.cumsum(y[..., None] <= q, axis=-2)
    t = np.arange(1, y.shape[-1] + 1)[:, None]
    return np.abs(F - a * t)


def admissible_c(max_likelihood, n_levels, *, B, beta, eta, margin=THEOREM2_MARGIN):
    """Smallest ``c`` allowed by the likelihood condition of Theorem 2 (or Corollary 1).

    ``c = max(2 / beta, 1 + 2 / beta * log(2 eta B (K + 1) L* + margin B))``:
    the condition ``L* <= (exp(beta (c - 1) / 2) - margin B) / (2 eta B (K + 1))``
    solved for ``c``, together with the theorem's ``c > 2 / beta`` (taken at
    its infimum).

    Parameters
    ----------
    max_likelihood : array_like
        ``L*``, the largest likelihood (Eq. 5) seen so far; non-negative.
    n_levels : int
        ``K``.
    B, beta, eta : float
        Label bound, growth rate of Eq. (3), elastic coefficient.
    margin : float, default 4
        ``4`` for Theorem 2 (:data:`THEOREM2_MARGIN`), ``6`` for Corollary 1
        (:data:`COROLLARY1_MARGIN`).

    Returns
    -------
    ndarray of the shape of ``max_likelihood``

    Examples
    --------
    >>> float(admissible_c(0.0, 1, B=1.0, beta=2.0, eta=1.0, margin=4.0).round(3))
    2.386
    """
    L = as_float_array(max_likelihood, "max_likelihood", allow_empty=True)
    if np.any(L < 0):
        raise ValueError("max_likelihood must be non-negative")
    K = check_int(n_levels, "n_levels", minimum=1)
    B = _require_bound(B)
    beta = float(check_positive(beta, "beta"))
    eta = float(check_positive(eta, "eta"))
    margin = float(check_positive(margin, "margin", strict=False))
    return np.maximum(2 / beta, 1 + 2 / beta * np.log(2 * eta * B * (K + 1) * L + margin * B))


class SpringBoundCheck(NamedTuple):
    """Result of :func:`spring_bound_check`; every field has shape (..., T)."""

    deviation: np.ndarray
    """``max_k |F_k^T - alpha_k T|`` in counts."""
    bound: np.ndarray
    """``K (2 h(T) + c_T)`` in counts."""
    likelihood: np.ndarray
    """The likelihood of Eq. (5) at each step."""
    max_likelihood: np.ndarray
    """Its running maximum ``L*_T``."""
    c: np.ndarray
    """The smallest admissible ``c_T``."""


def spring_bound_check(y, quantiles, levels, *, B, beta, eta, delta, pid=False, kind="half"):
    """Theorem 2 (or, with ``pid=True``, Corollary 1) along a transcript, at every ``T``.

    Parameters
    ----------
    y : array_like of shape (..., T)
        Labels.
    quantiles : array_like of shape (..., T, K)
        Output quantiles of the springs algorithm (strictly increasing inside ``(-B, B)``).
    levels : array_like of shape (K,)
    B : float
        Label bound.
    beta, eta, delta : float
        The algorithm's hyper-parameters (Eq. 3 and the springs).
    pid : bool, default False
        Use Corollary 1's ``6B`` margin instead of Theorem 2's ``4B``.
    kind : {"half", "full"}, default "half"
        Tolerance of :func:`~calibtut.online.conformal.binomial_tolerance`.

    Returns
    -------
    SpringBoundCheck
        ``deviation``, ``bound``, ``likelihood``, ``max_likelihood`` and ``c``,
        each of shape (..., T). The theorem says ``deviation <= bound``.

    Examples
    --------
    >>> z = np.tile([-1.0, 0.0, 1.0], (4, 1))
    >>> r = spring_bound_check([-0.5, 0.5, 0.5, -1.5], z, [0.25, 0.5, 0.75], B=2.0, beta=0.16, eta=0.96, delta=0.47)
    >>> bool(np.all(r.deviation <= r.bound)), r.likelihood.tolist()
    (True, [0.25, 0.25, 0.25, 0.25])
    """
    if not isinstance(pid, bool):
        raise TypeError(f"pid must be a boolean, got {type(pid).__name__}")
    y, q, a = _check(y, quantiles, levels)
    L = interval_likelihood(y, q, a, B)
    running = np.maximum.accumulate(L, axis=-1)
    c = admissible_c(running, len(a), B=B, beta=beta, eta=eta, margin=COROLLARY1_MARGIN if pid else THEOREM2_MARGIN)
    h = binomial_tolerance(y.shape[-1], a, _check_delta(delta), kind)[1:].max(axis=1)
    deviation = count_deviation(y, q, a).max(axis=-1)
    return SpringBoundCheck(deviation, len(a) * (2 * h + c), L, running, c)


def _around_median(z, t, B):
    """Labels just below (even ``t``) or just above (odd ``t``) the central quantile."""
    c = z.shape[1] // 2
    padded = np.concatenate([np.full((len(z), 1), -B), z, np.full((len(z), 1), B)], axis=1)
    gap = np.minimum(padded[:, c + 1] - padded[:, c], padded[:, c + 2] - padded[:, c + 1])
    sign = -1.0 if t % 2 == 0 else 1.0
    return np.clip(z[:, c] + sign * MEDIAN_OFFSET * gap, -B, B)


def adversarial_labels(calibrator, forecasts, n_steps=None, *, strategy="greedy", B=None):
    """Play the causal protocol with a nature that picks each label after seeing the forecast.

    At every step the calibrator predicts (``predict``), nature reads the
    forecast ``Z^t`` and its own count of past hits ``F^{t-1}``, chooses the
    label and reveals it (``update``). Strategies:

    * ``"greedy"``: among ``-B``, the current quantiles (clipped to
      ``[-B, B]``) and ``B``, the label that makes ``max_k |F_k^t - alpha_k t|``
      largest after this step (the first one on ties);
    * ``"above"``: always ``B`` (no label falls below a quantile under ``B``);
    * ``"below"``: always ``-B``;
    * ``"median"``: alternately just below and just above the central output
      quantile ``Z_c`` (``c = K // 2``, the median for odd ``K``), at
      ``MEDIAN_OFFSET`` times the smaller of the two gaps next to it. The
      quantiles around ``Z_c`` are pulled onto the labels, the intervals
      between them shrink, and the likelihood of Eq. (5) grows without bound:
      this nature defeats the hypothesis of Theorem 2.

    Parameters
    ----------
    calibrator : OnlineCalibrator
        Reset to ``n_series`` series before the first step.
    forecasts : array_like of shape (n_series, K) or (n_series, T, K)
        Base quantile forecasts: the same at every step, or one per step.
    n_steps : int, optional
        ``T``; required for stationary ``(n_series, K)`` forecasts, otherwise
        it must equal ``forecasts.shape[1]`` when given.
    strategy : {"greedy", "above", "below"}, default "greedy"
    B : float, optional
        Label bound; defaults to ``calibrator.B``.

    Returns
    -------
    quantiles : ndarray of shape (n_series, T, K)
        The calibrator's forecasts.
    labels : ndarray of shape (n_series, T)
        Nature's labels.

    Examples
    --------
    >>> from calibtut.online import OriginalForecast
    >>> z, y = adversarial_labels(OriginalForecast([0.5], B=1.0), [[0.0]], n_steps=3, strategy="greedy")
    >>> y.tolist()
    [[-1.0, -1.0, -1.0]]
    """
    if not isinstance(calibrator, OnlineCalibrator):
        raise TypeError(f"calibrator must be an OnlineCalibrator, got {type(calibrator).__name__}")
    if strategy not in ADVERSARY_STRATEGIES:
        raise ValueError(f"strategy must be one of {ADVERSARY_STRATEGIES}, got {strategy!r}")
    B = _require_bound(calibrator.B if B is None else B)
    f = as_float_array(forecasts, "forecasts", ndim=(2, 3))
    if f.shape[-1] != calibrator.n_levels:
        raise ValueError(f"forecasts must have {calibrator.n_levels} entries on the last axis, got shape {f.shape}")
    if f.ndim == 2:
        if n_steps is None:
            raise ValueError("n_steps is required when forecasts has shape (n_series, K)")
        T = check_int(n_steps, "n_steps", minimum=1)
    else:
        T = f.shape[1]
        if n_steps is not None and check_int(n_steps, "n_steps", minimum=1) != T:
            raise ValueError(f"n_steps must equal forecasts.shape[1] = {T}, got {n_steps}")
    n, levels = f.shape[0], calibrator.levels
    calibrator.reset(n)
    counts = np.zeros((n, len(levels)))
    quantiles = np.empty((n, T, len(levels)))
    labels = np.empty((n, T))
    edge = np.full((n, 1), B)
    for t in range(T):
        z = calibrator.predict(f if f.ndim == 2 else f[:, t])
        if strategy == "above":
            y = np.full(n, B)
        elif strategy == "below":
            y = np.full(n, -B)
        elif strategy == "median":
            y = _around_median(z, t, B)
        else:
            candidates = np.concatenate([-edge, np.clip(z, -B, B), edge], axis=1)
            hits = candidates[:, :, None] <= z[:, None, :]
            harm = np.abs(counts[:, None, :] + hits - levels * (t + 1)).max(axis=2)
            y = candidates[np.arange(n), harm.argmax(axis=1)]
        counts += y[:, None] <= z
        calibrator.update(y)
        quantiles[:, t] = z
        labels[:, t] = y
    return quantiles, labels
