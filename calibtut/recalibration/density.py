r"""Density of a quantile-recalibration map, and the NLL of the recalibrated model.

The recalibrated CDF is :math:`F' = \varphi \circ F` (paper 002, Algorithm 1), so
its density is :math:`f'(y) = \varphi'(F(y))\, f(y)` and its negative log-likelihood

.. math::

    -\log f'(y) = -\log f(y) - \log \varphi'(F(y)).

* LIN: :math:`\varphi'` is the slope of the linear segment holding the PIT
  (positive everywhere: tied PITs share one knot, so every segment rises
  over a positive gap, and the slopes integrate to
  :math:`\varphi(1) - \varphi(0) = 1`).
* KDE: the derivative of the reflected, renormalised logistic mixture,
  :math:`\tau \sum_i \sum_r s_{ir}(1 - s_{ir}) / (N\,c)` with the three
  reflected kernels :math:`r` and the normaliser :math:`c = \varphi_{raw}(1) - \varphi_{raw}(0)`.
* EMP and DCP: step functions; their derivative is 0 almost everywhere, so
  the recalibrated density is 0 and the NLL is :math:`+\infty` (paper 002,
  App. B.1). That is what :func:`recalibrated_nll` returns, not an error.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from calibtut._validation import as_float_array, check_fitted, check_probabilities, check_same_length
from calibtut.recalibration.quantile import QuantileRecalibrator

__all__ = ["map_density", "recalibrated_nll"]


def _fitted(recalibrator):
    if not isinstance(recalibrator, QuantileRecalibrator):
        raise TypeError(f"recalibrator must be a QuantileRecalibrator, got {type(recalibrator).__name__}")
    return check_fitted(recalibrator, "pit_")


def map_density(recalibrator, pit):
    """Derivative ``phi'(u)`` of a fitted recalibration map.

    Parameters
    ----------
    recalibrator : QuantileRecalibrator
        Fitted map.
    pit : array_like of shape (n,)
        Points of [0, 1] (base PITs ``F(y | x)``).

    Returns
    -------
    numpy.ndarray of shape (n,)
        ``phi'(pit)``: the right-hand slope for ``"lin"`` (the left one at 1),
        the exact derivative for ``"kde"``, 0 for ``"emp"`` and ``"dcp"``.

    Examples
    --------
    >>> rec = QuantileRecalibrator(method="lin").fit([0.25, 0.5])  # knots (0,0) (.25,1/3) (.5,2/3) (1,1)
    >>> map_density(rec, [0.1, 0.3, 0.9]).round(4)
    array([1.3333, 1.3333, 0.6667])
    """
    rec = _fitted(recalibrator)
    u = check_probabilities(pit, "pit", ndim=1)
    if rec.params_.method in ("emp", "dcp"):
        return np.zeros(u.size)
    if rec.params_.method == "lin":
        xs, ys = rec._lin_knots  # strictly increasing: tied PITs share one knot
        j = np.minimum(np.searchsorted(xs, u, side="right") - 1, xs.size - 2)
        return (ys[j + 1] - ys[j]) / (xs[j + 1] - xs[j])
    z = rec.pit_[None, :]
    v = u[:, None]
    total = np.zeros(u.size)
    for shifted in (v - z, v + z, v + z - 2):
        s = special.expit(rec.params_.tau * shifted)
        total += (s * (1 - s)).mean(axis=1)
    return rec.params_.tau * total / rec._kde_total


def recalibrated_nll(recalibrator, pit, log_density, reduction="mean"):
    """Negative log-likelihood of the recalibrated model ``phi o F``.

    Parameters
    ----------
    recalibrator : QuantileRecalibrator
        Fitted map.
    pit : array_like of shape (n,)
        Base PITs ``F(y_i | x_i)`` of the evaluation points.
    log_density : array_like of shape (n,)
        Base log-densities ``log f(y_i | x_i)``.
    reduction : {"mean", "none"}, default "mean"

    Returns
    -------
    float or numpy.ndarray
        ``+inf`` for the step maps ``"emp"`` and ``"dcp"``.

    Examples
    --------
    >>> from scipy import stats
    >>> import numpy as np
    >>> y = np.array([-1.0, 0.0, 2.0])
    >>> emp = QuantileRecalibrator(method="emp").fit([0.2, 0.4, 0.6, 0.8])
    >>> recalibrated_nll(emp, stats.norm.cdf(y), stats.norm.logpdf(y))
    inf
    >>> uniform = QuantileRecalibrator(method="lin").fit(np.arange(1, 100) / 100)  # the identity map
    >>> bool(np.isclose(recalibrated_nll(uniform, stats.norm.cdf(y), stats.norm.logpdf(y)),
    ...                 -stats.norm.logpdf(y).mean()))
    True
    """
    u = check_probabilities(pit, "pit", ndim=1)
    logf = as_float_array(log_density, "log_density", ndim=1)
    check_same_length(pit=u, log_density=logf)
    if reduction not in ("mean", "none"):
        raise ValueError(f"reduction must be 'mean' or 'none', got {reduction!r}")
    slope = map_density(recalibrator, u)
    with np.errstate(divide="ignore"):
        values = -logf - np.log(slope)
    return float(values.mean()) if reduction == "mean" else values
