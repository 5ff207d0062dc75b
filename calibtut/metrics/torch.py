"""Differentiable versions of the regression scores, for training losses.

Torch tensors in, torch tensors out; the formulas are those of
:mod:`calibtut.metrics.pit` and :mod:`calibtut.metrics.scores`, which they
match to floating-point precision. ``reduction="mean"`` returns a 0-d tensor,
``reduction="none"`` the per-observation values. Arguments are checked for
type, shape and (for standard deviations and weights) positivity; the checks
read values, so they synchronise with the device.
"""

from __future__ import annotations

import math

# torch through calibtut._torch: where it is not installed, an ImportError that says how to install it
from calibtut._torch import torch

__all__ = [
    "pit_gaussian",
    "nll_gaussian",
    "crps_gaussian",
    "pinball_loss",
    "nll_mixture",
    "crps_mixture",
]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_SQRT2 = math.sqrt(2.0)


def _tensor(x, name, ndim):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not torch.is_floating_point(x):
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    if x.dim() != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {tuple(x.shape)}")
    if x.numel() == 0:
        raise ValueError(f"{name} must not be empty")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} contains NaN or infinite values")
    return x


def _same_shape(**tensors):
    shapes = {k: tuple(v.shape) for k, v in tensors.items()}
    if len(set(shapes.values())) > 1:
        detail = ", ".join(f"{k} has shape {v}" for k, v in shapes.items())
        raise ValueError(f"arguments must have the same shape: {detail}")


def _positive(x, name):
    if not bool((x > 0).all()):
        raise ValueError(f"{name} must be strictly positive")
    return x


def _gaussian(y, mean, std):
    y, mean, std = _tensor(y, "y", 1), _tensor(mean, "mean", 1), _positive(_tensor(std, "std", 1), "std")
    _same_shape(y=y, mean=mean, std=std)
    return y, mean, std


def _mixture(y, weights, means, stds):
    y = _tensor(y, "y", 1)
    weights, means = _tensor(weights, "weights", 2), _tensor(means, "means", 2)
    stds = _positive(_tensor(stds, "stds", 2), "stds")
    _same_shape(weights=weights, means=means, stds=stds)
    if weights.shape[0] != y.shape[0]:
        raise ValueError(f"weights has {weights.shape[0]} rows but y has {y.shape[0]} entries")
    if bool((weights < 0).any()) or not bool(torch.allclose(weights.sum(1), torch.ones_like(y), atol=1e-6, rtol=0)):
        raise ValueError("weights must be non-negative and sum to 1 along axis 1")
    return y, weights, means, stds


def _reduce(values, reduction):
    if reduction == "mean":
        return values.mean()
    if reduction == "none":
        return values
    raise ValueError(f"reduction must be 'mean' or 'none', got {reduction!r}")


def _phi(z):
    return torch.exp(-0.5 * z**2 - _LOG_SQRT_2PI)


def _Phi(z):
    return 0.5 * torch.erfc(-z / _SQRT2)


def pit_gaussian(y, mean, std):
    r"""Gaussian CDF at the targets, :math:`\Phi((y - \mu)/\sigma)`, differentiable.

    Parameters
    ----------
    y, mean, std : torch.Tensor, shape (n,)
        Targets, predicted means and standard deviations (finite, ``std > 0``).

    Returns
    -------
    torch.Tensor, shape (n,)

    Examples
    --------
    >>> t = torch.tensor
    >>> pit_gaussian(t([0.0, 1.0]), t([0.0, 0.0]), t([1.0, 1.0])).tolist() == [0.5, 0.8413447141647339]
    True
    """
    y, mean, std = _gaussian(y, mean, std)
    return _Phi((y - mean) / std)


def nll_gaussian(y, mean, std, reduction="mean"):
    r"""Gaussian negative log-likelihood :math:`\log\sigma + \tfrac12\log 2\pi + \tfrac12 z^2`.

    Unlike ``torch.nn.GaussianNLLLoss`` it keeps the constant and takes a
    standard deviation, not a variance.

    Parameters
    ----------
    y, mean, std : torch.Tensor, shape (n,)
        Targets, predicted means and standard deviations (finite, ``std > 0``).
    reduction : {"mean", "none"}, default "mean"
        ``"none"`` returns the (n,) tensor.

    Examples
    --------
    >>> round(nll_gaussian(torch.zeros(1), torch.zeros(1), torch.ones(1)).item(), 4)
    0.9189
    """
    y, mean, std = _gaussian(y, mean, std)
    z = (y - mean) / std
    return _reduce(torch.log(std) + _LOG_SQRT_2PI + 0.5 * z**2, reduction)


def crps_gaussian(y, mean, std, reduction="mean"):
    r"""Closed-form Gaussian CRPS :math:`\sigma[z(2\Phi(z) - 1) + 2\varphi(z) - 1/\sqrt\pi]`.

    Parameters
    ----------
    y, mean, std : torch.Tensor, shape (n,)
        Targets, predicted means and standard deviations (finite, ``std > 0``).
    reduction : {"mean", "none"}, default "mean"
        ``"none"`` returns the (n,) tensor.

    Examples
    --------
    >>> round(crps_gaussian(torch.zeros(1), torch.zeros(1), torch.ones(1)).item(), 4)
    0.2337
    """
    y, mean, std = _gaussian(y, mean, std)
    z = (y - mean) / std
    crps = std * (z * (2 * _Phi(z) - 1) + 2 * _phi(z) - 1 / math.sqrt(math.pi))
    return _reduce(crps, reduction)


def pinball_loss(y, quantiles, levels, reduction="mean"):
    r"""Pinball loss :math:`\max(\alpha(y - q), (\alpha - 1)(y - q))`.

    Parameters
    ----------
    y : torch.Tensor, shape (n,)
    quantiles : torch.Tensor, shape (n, n_levels)
    levels : torch.Tensor, shape (n_levels,)
        In (0, 1). Unlike the numpy version, levels need not be sorted and
        quantiles need not be monotone (training draws random levels).
    reduction : {"mean", "none"}
        ``"none"`` returns the (n, n_levels) tensor.

    Examples
    --------
    >>> t = torch.tensor
    >>> round(pinball_loss(t([1.0]), t([[0.0, 3.0]]), t([0.1, 0.9])).item(), 4)
    0.15
    """
    y, quantiles, levels = _tensor(y, "y", 1), _tensor(quantiles, "quantiles", 2), _tensor(levels, "levels", 1)
    if quantiles.shape != (y.shape[0], levels.shape[0]):
        raise ValueError(
            f"quantiles must have shape (len(y), len(levels)) = {(y.shape[0], levels.shape[0])}, "
            f"got {tuple(quantiles.shape)}"
        )
    if bool((levels <= 0).any()) or bool((levels >= 1).any()):
        raise ValueError("levels must lie strictly inside (0, 1)")
    diff = y[:, None] - quantiles
    return _reduce(torch.maximum(levels * diff, (levels - 1) * diff), reduction)


def nll_mixture(y, weights, means, stds, reduction="mean"):
    r"""Gaussian-mixture negative log-likelihood via ``torch.logsumexp``.

    Parameters
    ----------
    y : torch.Tensor, shape (n,)
    weights, means, stds : torch.Tensor, shape (n, K)
        Component weights (rows summing to 1), means and standard deviations (> 0).
    reduction : {"mean", "none"}, default "mean"
        ``"none"`` returns the (n,) tensor.

    Examples
    --------
    >>> t = torch.tensor
    >>> round(nll_mixture(t([0.0]), t([[0.5, 0.5]]), t([[0.0, 0.0]]), t([[1.0, 1.0]])).item(), 4)
    0.9189
    """
    y, weights, means, stds = _mixture(y, weights, means, stds)
    z = (y[:, None] - means) / stds
    log_comp = torch.log(weights) - 0.5 * z**2 - torch.log(stds) - _LOG_SQRT_2PI
    return _reduce(-torch.logsumexp(log_comp, dim=1), reduction)


def _a_term(m, s):
    z = m / s
    return m * (2 * _Phi(z) - 1) + 2 * s * _phi(z)


def crps_mixture(y, weights, means, stds, reduction="mean"):
    r"""Closed-form CRPS of Gaussian mixtures (see :func:`calibtut.metrics.scores.crps_mixture`).

    Parameters
    ----------
    y : torch.Tensor, shape (n,)
    weights, means, stds : torch.Tensor, shape (n, K)
        Component weights (rows summing to 1), means and standard deviations (> 0).
    reduction : {"mean", "none"}, default "mean"
        ``"none"`` returns the (n,) tensor.

    Examples
    --------
    >>> t = torch.tensor
    >>> round(crps_mixture(t([0.0]), t([[1.0]]), t([[0.0]]), t([[1.0]])).item(), 4)
    0.2337
    """
    y, weights, means, stds = _mixture(y, weights, means, stds)
    first = torch.sum(weights * _a_term(y[:, None] - means, stds), dim=1)
    pair_m = means[:, :, None] - means[:, None, :]
    pair_s = torch.sqrt(stds[:, :, None] ** 2 + stds[:, None, :] ** 2)
    pair_w = weights[:, :, None] * weights[:, None, :]
    second = 0.5 * torch.sum(pair_w * _a_term(pair_m, pair_s), dim=(1, 2))
    return _reduce(first - second, reduction)

def pit_mixture(y, weights, means, stds):
    r"""Differentiable mixture CDF :math:`\sum_k w_k \Phi((y - \mu_k)/\sigma_k)`, the PIT.

    Parameters
    ----------
    y : torch.Tensor, shape (n,)
    weights, means, stds : torch.Tensor, shape (n, K)

    Returns
    -------
    torch.Tensor, shape (n,)

    Examples
    --------
    >>> t = torch.tensor
    >>> pit_mixture(t([0.0]), t([[0.5, 0.5]]), t([[-1.0, 1.0]]), t([[1.0, 1.0]]))
    tensor([0.5000])
    """
    for name, value in (("y", y), ("weights", weights), ("means", means), ("stds", stds)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if y.ndim != 1 or weights.ndim != 2 or weights.shape != means.shape or means.shape != stds.shape:
        raise ValueError(
            f"y must be (n,) and weights, means, stds (n, K) alike, got {tuple(y.shape)}, "
            f"{tuple(weights.shape)}, {tuple(means.shape)}, {tuple(stds.shape)}"
        )
    if weights.shape[0] != y.shape[0]:
        raise ValueError(f"weights has {weights.shape[0]} rows but y has {y.shape[0]} entries")
    z = (y[:, None] - means) / stds
    return torch.sum(weights * 0.5 * torch.erfc(-z / math.sqrt(2.0)), dim=1)
