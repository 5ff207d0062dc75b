"""The exponential adjustment of Eq. (3) and the hyper-parameter presets.

Reading of Eq. (3) (signs restored from the text): with ``F_k^t`` the number of
labels at or below the output quantile ``Z_k`` up to step ``t`` and
``h_k(t) = b_delta(t) t`` the binomial half-width in counts,

* ``E_k^{t+1} = 1 - exp(beta (F_k^t - alpha_k t - h_k(t)))`` if ``F_k^t > alpha_k t + h_k(t)``
  (labels fall below too often: move the quantile down);
* ``E_k^{t+1} = exp(beta (alpha_k t - h_k(t) - F_k^t)) - 1`` if ``F_k^t < alpha_k t - h_k(t)``;
* ``E_k^{t+1} = 0`` otherwise.

The basic algorithm outputs ``Z_k^{t+1} = Z~_k^{t+1} + E_k^{t+1}``.

Numerical safeguard: the exponent is capped at ``log(1 + 2B) + 10`` (at
``UNBOUNDED_EXPONENT`` without ``B``). Theorem 1's argument needs the
exponent to reach ``log(1 + 2B)`` only (then ``|E| > 2B``), so the cap keeps
it intact; it bounds ``|E|`` by about ``22000 (1 + 2B)``, where an uncapped
exponential would ask for gaps below ``1e-16 B``. Under the median adversary
of chapter 3 the equilibrium gaps still shrink to about ``1e-11`` over a
thousand steps; :func:`calibtut.online.springs.solve_equilibrium` then solves
in a cancellation-free form. Theorem 2's argument (Lemma 2) uses the uncapped
exponential once the likelihood constant ``c`` is large, so with the cap the
theorem is checked, not proved, for such transcripts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from calibtut._validation import as_float_array, check_alpha, check_int, check_positive, check_real
from calibtut.online._forecasts import check_bound, check_online_levels

__all__ = ["DriftParams", "PAPER", "PRESETS", "TORCHUQ", "exponential_adjustment", "integral_gains"]

EXPONENT_MARGIN = 10.0
"""Margin of the exponent cap above Theorem 1's ``log(1 + 2B)``."""

UNBOUNDED_EXPONENT = 15.0
"""Exponent cap without a label bound."""


def max_exponent(B):
    """Cap on ``beta * excess`` in Eq. (3): ``log(1 + 2B) + 10``, or 15 without ``B``.

    Examples
    --------
    >>> round(max_exponent(5.0), 3)
    12.398
    """
    return UNBOUNDED_EXPONENT if B is None else float(np.log1p(2 * B) + EXPONENT_MARGIN)


@dataclass(frozen=True)
class DriftParams:
    """Hyper-parameters of the drift calibrator.

    Parameters
    ----------
    delta : float
        Miscoverage of the binomial tolerance ``b_delta`` (Eq. 3).
    beta : float
        Growth rate of the exponential adjustment (Eq. 3).
    eta : float
        Elastic coefficient of the springs (Section 3.2).
    kp, kd : float
        Proportional and derivative gains (Eq. 6).
    ki_max, ki_min : float
        Integral gain at the central and at the extreme levels (Eq. 45).
    tolerance : {"half", "full"}
        ``"half"``: the tolerance in counts is the half-width of the
        ``(1 - delta)`` binomial band (the paper); ``"full"``: its full width
        ``ppf(1 - delta/2) - ppf(delta/2)``, at least 1 (the public code, whose
        ``a`` is ``delta / 2``).

    Examples
    --------
    >>> PAPER.beta, TORCHUQ.kd
    (0.16, 0.9)
    """

    delta: float
    beta: float
    eta: float
    kp: float
    kd: float
    ki_max: float
    ki_min: float
    tolerance: str = "half"

    def __post_init__(self):
        check_alpha(self.delta, "delta")
        for name in ("beta", "eta"):
            check_real(getattr(self, name), name, low=0, low_open=True)
        for name in ("kp", "kd", "ki_max", "ki_min"):
            check_real(getattr(self, name), name, low=0)
        if self.tolerance not in ("half", "full"):
            raise ValueError(f"tolerance must be 'half' or 'full', got {self.tolerance!r}")

    def with_(self, **changes):
        """A copy with some fields changed.

        Examples
        --------
        >>> PAPER.with_(beta=0.5).beta
        0.5
        """
        return replace(self, **changes)


PAPER = DriftParams(delta=0.47, beta=0.16, eta=0.96, kp=1.00, kd=0.08, ki_max=0.09, ki_min=0.04)
"""The paper's recommended values (Appendix B.1, tuned with ``w_mix = 0.4``)."""

TORCHUQ = DriftParams(delta=0.4, beta=0.553, eta=0.1878, kp=1.0, kd=0.9, ki_max=0.16, ki_min=0.09, tolerance="full")
"""The public torchuq code's defaults (``a = 0.2`` is ``delta / 2``; ``ki`` 0.09 in the tails, 0.16 at the centre)."""

PRESETS = {"paper": PAPER, "torchuq": TORCHUQ}


def resolve_params(params="paper", **overrides):
    """A :class:`DriftParams` from a preset name or instance, with overrides.

    Examples
    --------
    >>> resolve_params("torchuq", beta=0.2).beta
    0.2
    """
    if isinstance(params, str):
        if params not in PRESETS:
            raise ValueError(f"params must be one of {sorted(PRESETS)} or a DriftParams, got {params!r}")
        params = PRESETS[params]
    elif not isinstance(params, DriftParams):
        raise TypeError(f"params must be a preset name or a DriftParams, got {type(params).__name__}")
    return params.with_(**overrides) if overrides else params


def integral_gains(n_levels, ki_max, ki_min):
    """Level-dependent integral gains of Eq. (45).

    ``k_{i,k} = ki_max - (ki_max - ki_min) |1 - 2 (k - 1) / (K - 1)|`` for
    ``k = 1..K``: ``ki_max`` at the centre, ``ki_min`` at both ends (a single
    level gets ``ki_max``).

    Examples
    --------
    >>> integral_gains(5, 0.09, 0.04).round(3).tolist()
    [0.04, 0.065, 0.09, 0.065, 0.04]
    """
    K = check_int(n_levels, "n_levels", minimum=1)
    ki_max = check_real(ki_max, "ki_max", low=0)
    ki_min = check_real(ki_min, "ki_min", low=0)
    if K == 1:
        return np.array([float(ki_max)])
    k = np.arange(1, K + 1)
    return ki_max - (ki_max - ki_min) * np.abs(1 - 2 * (k - 1) / (K - 1))


def exponential_adjustment(counts, t, levels, tolerance, beta, B=None):
    """The adjustment ``E`` of Eq. (3) for the next step.

    Parameters
    ----------
    counts : array_like of shape (n, K)
        ``F_k^t``: labels at or below each output quantile so far.
    t : int
        Number of labels seen so far.
    levels : array_like of shape (K,)
    tolerance : array_like of shape (K,)
        ``b_delta(t) t`` in counts.
    beta : float
    B : float, optional
        Label bound, sets the exponent cap (``max_exponent``).

    Returns
    -------
    ndarray of shape (n, K)

    Examples
    --------
    >>> exponential_adjustment([[9.0, 1.0, 5.0]], 10, [0.3, 0.5, 0.7], np.array([2.0, 2.0, 2.0]), 1.0).round(3).tolist()
    [[-53.598, 6.389, 0.0]]
    """
    F = as_float_array(counts, "counts", ndim=2)
    a = check_online_levels(levels)
    t = check_int(t, "t", minimum=0)
    tolerance = check_positive(tolerance, "tolerance", strict=False, ndim=(0, 1))
    beta = check_real(beta, "beta", low=0, low_open=True)
    B = check_bound(B)
    dev = F - a * t
    excess = np.minimum(beta * (np.abs(dev) - tolerance), max_exponent(B))
    return np.where(excess > 0, -np.sign(dev) * np.expm1(np.maximum(excess, 0.0)), 0.0)
