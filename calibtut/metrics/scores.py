"""Proper scoring rules for regression: pinball loss, CRPS and negative log-likelihood.

Every score is negatively oriented (smaller is better). ``reduction="mean"``
returns the average over observations as a float, ``reduction="none"`` the
per-observation scores.

References
----------
- [0] "Provably Calibrated Regression Under Distribution Drift", ICLR 2022
  submission (paper 000): average pinball loss over quantile levels.
- [2] Dheur & Ben Taieb, ICML 2023 (paper 002): CRPS of Gaussian mixtures,
  CRPS of quantile models by averaging quantile scores.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from calibtut._numeric import gaussian_abs_mean, reduce_scores
from calibtut.metrics.pit import check_gaussian, check_mixture, check_quantiles

__all__ = [
    "pinball_loss",
    "crps_gaussian",
    "crps_mixture",
    "crps_quantile",
    "nll_gaussian",
    "nll_mixture",
]

_LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)
_PAIR_BLOCK = 2**20  # component pairs per block of rows in crps_mixture (a few 8 MiB temporaries)


def _pinball(y, quantiles, levels):
    diff = y[:, None] - quantiles
    return np.maximum(levels * diff, (levels - 1) * diff)


def pinball_loss(y, quantiles, levels, reduction="mean"):
    r"""Pinball (quantile) loss :math:`\rho_\alpha(y - q) = \max(\alpha (y - q), (\alpha - 1)(y - q))`.

    Paper [0] writes the average over levels as
    :math:`\frac1K \sum_k \alpha_k \mathrm{ReLU}(Y - Z_k) + (1 - \alpha_k)\mathrm{ReLU}(Z_k - Y)`
    (the formula in our copy of it swaps the two ReLU arguments; we use the orientation
    that makes the :math:`\alpha_k`-quantile the minimiser).

    Parameters
    ----------
    y : array_like, shape (n,)
    quantiles : array_like, shape (n, n_levels)
        Predicted quantiles (non-decreasing along rows).
    levels : array_like, shape (n_levels,)
        Strictly increasing levels in (0, 1).
    reduction : {"mean", "level", "none"}
        ``"mean"``: a float averaged over observations and levels;
        ``"level"``: an array (n_levels,) averaged over observations (the
        value of ``sklearn.metrics.mean_pinball_loss`` per level);
        ``"none"``: the (n, n_levels) array.

    Returns
    -------
    float or numpy.ndarray

    Examples
    --------
    >>> # y = 1, q_.1 = 0 -> .1 * 1 = .1; q_.9 = 3 -> (1 - .9) * 2 = .2
    >>> pinball_loss([1.0], [[0.0, 3.0]], [0.1, 0.9], reduction="level").round(3).tolist()
    [0.1, 0.2]
    """
    y, quantiles, levels = check_quantiles(y, quantiles, levels)
    loss = _pinball(y, quantiles, levels)
    if reduction == "level":
        return loss.mean(axis=0)
    return reduce_scores(loss, reduction)


def _crps_normal_standard(z):
    """CRPS of N(0, 1) at z: z (2 Phi(z) - 1) + 2 phi(z) - 1 / sqrt(pi)."""
    return z * (2 * special.ndtr(z) - 1) + 2 * np.exp(-0.5 * z**2 - _LOG_SQRT_2PI) - 1 / np.sqrt(np.pi)


def crps_gaussian(y, mean, std, reduction="mean"):
    r"""CRPS of Gaussian predictions, closed form (Gneiting et al. 2005).

    .. math:: \sigma\left[z(2\Phi(z) - 1) + 2\varphi(z) - 1/\sqrt{\pi}\right],\quad z = (y - \mu)/\sigma

    Parameters
    ----------
    y, mean, std : array_like, shape (n,)
    reduction : {"mean", "none"}

    Returns
    -------
    float or numpy.ndarray

    Examples
    --------
    >>> # at z = 0: 2 phi(0) - 1/sqrt(pi) = 0.7979 - 0.5642 = 0.2337
    >>> round(crps_gaussian([0.0], [0.0], [1.0]), 4)
    0.2337
    """
    y, mean, std = check_gaussian(y, mean, std)
    return reduce_scores(std * _crps_normal_standard((y - mean) / std), reduction)


def crps_mixture(y, weights, means, stds, reduction="mean"):
    r"""CRPS of Gaussian-mixture predictions, closed form (Grimit et al. 2006; [2]).

    .. math:: \sum_i w_i A(y - \mu_i, \sigma_i) - \tfrac12 \sum_{i,j} w_i w_j A(\mu_i - \mu_j, \sqrt{\sigma_i^2 + \sigma_j^2}),

    with :math:`A(m, s) = m(2\Phi(m/s) - 1) + 2 s\varphi(m/s) = E|N(m, s^2)|`.
    Time is O(n K^2); the pair term is computed in blocks of rows holding
    about ``2**20`` pairs each, so memory is O(n K + max(K^2, 2**20)).

    Parameters
    ----------
    y : array_like, shape (n,)
    weights, means, stds : array_like, shape (n, n_components)
    reduction : {"mean", "none"}

    Returns
    -------
    float or numpy.ndarray

    Examples
    --------
    >>> # a one-component mixture is a Gaussian
    >>> round(crps_mixture([0.0], [[1.0]], [[0.0]], [[1.0]]), 4)
    0.2337
    """
    y, weights, means, stds = check_mixture(y, weights, means, stds)
    first = np.sum(weights * gaussian_abs_mean(y[:, None] - means, stds), axis=1)
    second = np.empty_like(first)
    rows = max(1, _PAIR_BLOCK // means.shape[1] ** 2)
    for start in range(0, len(y), rows):
        block = slice(start, start + rows)
        second[block] = _pair_term(weights[block], means[block], stds[block])
    return reduce_scores(first - second, reduction)


def _pair_term(weights, means, stds):
    """Half of E|X - X'| for X, X' independent draws of each row's mixture, shape (rows,)."""
    pair_m = means[:, :, None] - means[:, None, :]
    pair_s = np.sqrt(stds[:, :, None] ** 2 + stds[:, None, :] ** 2)
    pair_w = weights[:, :, None] * weights[:, None, :]
    return 0.5 * np.sum(pair_w * gaussian_abs_mean(pair_m, pair_s), axis=(1, 2))


def crps_quantile(y, quantiles, levels, reduction="mean"):
    r"""CRPS approximated from quantiles: twice the pinball loss averaged over levels.

    Uses :math:`\mathrm{CRPS}(F, y) = 2\int_0^1 \rho_\alpha(y - F^{-1}(\alpha))\,d\alpha`,
    with the integral replaced by the mean over the given levels (the
    quantile decomposition; ``scoringrules.crps_quantile``). It is close to
    the CRPS only for many roughly equispaced levels (paper [2] uses 64).

    Parameters
    ----------
    y : array_like, shape (n,)
    quantiles : array_like, shape (n, n_levels)
    levels : array_like, shape (n_levels,)
    reduction : {"mean", "none"}

    Returns
    -------
    float or numpy.ndarray

    Examples
    --------
    >>> # pinball losses .1 and .2 -> 2 * .15
    >>> round(crps_quantile([1.0], [[0.0, 3.0]], [0.1, 0.9]), 3)
    0.3
    """
    y, quantiles, levels = check_quantiles(y, quantiles, levels)
    return reduce_scores(2 * _pinball(y, quantiles, levels).mean(axis=1), reduction)


def nll_gaussian(y, mean, std, reduction="mean"):
    r"""Negative log-likelihood of Gaussian predictions (log score, natural log).

    .. math:: \log\sigma + \tfrac12\log(2\pi) + \tfrac12 ((y - \mu)/\sigma)^2

    Parameters
    ----------
    y, mean, std : array_like, shape (n,)
    reduction : {"mean", "none"}

    Returns
    -------
    float or numpy.ndarray

    Examples
    --------
    >>> round(nll_gaussian([0.0], [0.0], [1.0]), 4)  # log(2 pi) / 2
    0.9189
    """
    y, mean, std = check_gaussian(y, mean, std)
    z = (y - mean) / std
    return reduce_scores(np.log(std) + _LOG_SQRT_2PI + 0.5 * z**2, reduction)


def nll_mixture(y, weights, means, stds, reduction="mean"):
    r"""Negative log-likelihood of Gaussian mixtures, via log-sum-exp.

    .. math:: -\log \sum_k w_k \varphi((y - \mu_k)/\sigma_k)/\sigma_k

    Zero weights are allowed (their components drop out).

    Parameters
    ----------
    y : array_like, shape (n,)
    weights, means, stds : array_like, shape (n, n_components)
    reduction : {"mean", "none"}

    Returns
    -------
    float or numpy.ndarray

    Examples
    --------
    >>> round(nll_mixture([0.0], [[0.5, 0.5]], [[0.0, 0.0]], [[1.0, 1.0]]), 4)
    0.9189
    """
    y, weights, means, stds = check_mixture(y, weights, means, stds)
    z = (y[:, None] - means) / stds
    log_comp = -0.5 * z**2 - np.log(stds) - _LOG_SQRT_2PI
    return reduce_scores(-special.logsumexp(log_comp, b=weights, axis=1), reduction)
