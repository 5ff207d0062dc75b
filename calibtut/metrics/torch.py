"""Differentiable versions of the regression scores, for training losses.

Torch tensors in, torch tensors out; the formulas are those of
:mod:`calibtut.metrics.pit` and :mod:`calibtut.metrics.scores`, which they
match to floating-point precision. ``reduction="mean"`` returns a 0-d tensor,
``reduction="none"`` the per-observation values. Arguments are checked for
type, shape, finiteness and (for standard deviations and weights) range; the
checks read values, so they synchronise with the device: a training loop,
which checked its data once, passes ``validate_args=False`` at each step.
"""

from __future__ import annotations

import math

# torch through calibtut._torch: where it is not installed, an ImportError that says how to install it
from calibtut._torch import check_quantile_batch, check_tensor, torch

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


def _same_shape(**tensors):
    shapes = {k: tuple(v.shape) for k, v in tensors.items()}
    if len(set(shapes.values())) > 1:
        detail = ", ".join(f"{k} has shape {v}" for k, v in shapes.items())
        raise ValueError(f"arguments must have the same shape: {detail}")


def _gaussian(y, mean, std):
    y, mean = check_tensor(y, "y", ndim=1), check_tensor(mean, "mean", ndim=1)
    std = check_tensor(std, "std", ndim=1, low=0, low_open=True)
    _same_shape(y=y, mean=mean, std=std)
    return y, mean, std


def _mixture(y, weights, means, stds):
    y = check_tensor(y, "y", ndim=1)
    weights, means = check_tensor(weights, "weights", ndim=2, low=0), check_tensor(means, "means", ndim=2)
    stds = check_tensor(stds, "stds", ndim=2, low=0, low_open=True)
    _same_shape(weights=weights, means=means, stds=stds)
    if weights.shape[0] != y.shape[0]:
        raise ValueError(f"weights has {weights.shape[0]} rows but y has {y.shape[0]} entries")
    if not bool(torch.allclose(weights.sum(1), torch.ones_like(y), atol=1e-6, rtol=0)):
        raise ValueError("weights must sum to 1 along axis 1")
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


def pit_gaussian(y, mean, std, *, validate_args=True):
    r"""Gaussian CDF at the targets, :math:`\Phi((y - \mu)/\sigma)`, differentiable.

    Parameters
    ----------
    y, mean, std : torch.Tensor, shape (n,)
        Targets, predicted means and standard deviations (finite, ``std > 0``).
    validate_args : bool, default True
        Check the tensors (a training step that checked its data once passes False).

    Returns
    -------
    torch.Tensor, shape (n,)

    Examples
    --------
    >>> t = torch.tensor
    >>> pit_gaussian(t([0.0, 1.0]), t([0.0, 0.0]), t([1.0, 1.0])).tolist() == [0.5, 0.8413447141647339]
    True
    """
    if validate_args:
        y, mean, std = _gaussian(y, mean, std)
    return _Phi((y - mean) / std)


def nll_gaussian(y, mean, std, reduction="mean", *, validate_args=True):
    r"""Gaussian negative log-likelihood :math:`\log\sigma + \tfrac12\log 2\pi + \tfrac12 z^2`.

    Unlike ``torch.nn.GaussianNLLLoss`` it keeps the constant and takes a
    standard deviation, not a variance.

    Parameters
    ----------
    y, mean, std : torch.Tensor, shape (n,)
        Targets, predicted means and standard deviations (finite, ``std > 0``).
    reduction : {"mean", "none"}, default "mean"
        ``"none"`` returns the (n,) tensor.
    validate_args : bool, default True
        Check the tensors (a training step that checked its data once passes False).

    Examples
    --------
    >>> round(nll_gaussian(torch.zeros(1), torch.zeros(1), torch.ones(1)).item(), 4)
    0.9189
    """
    if validate_args:
        y, mean, std = _gaussian(y, mean, std)
    z = (y - mean) / std
    return _reduce(torch.log(std) + _LOG_SQRT_2PI + 0.5 * z**2, reduction)


def crps_gaussian(y, mean, std, reduction="mean", *, validate_args=True):
    r"""Closed-form Gaussian CRPS :math:`\sigma[z(2\Phi(z) - 1) + 2\varphi(z) - 1/\sqrt\pi]`.

    Parameters
    ----------
    y, mean, std : torch.Tensor, shape (n,)
        Targets, predicted means and standard deviations (finite, ``std > 0``).
    reduction : {"mean", "none"}, default "mean"
        ``"none"`` returns the (n,) tensor.
    validate_args : bool, default True
        Check the tensors (a training step that checked its data once passes False).

    Examples
    --------
    >>> round(crps_gaussian(torch.zeros(1), torch.zeros(1), torch.ones(1)).item(), 4)
    0.2337
    """
    if validate_args:
        y, mean, std = _gaussian(y, mean, std)
    z = (y - mean) / std
    crps = std * (z * (2 * _Phi(z) - 1) + 2 * _phi(z) - 1 / math.sqrt(math.pi))
    return _reduce(crps, reduction)


def pinball_loss(y, quantiles, levels, reduction="mean", *, validate_args=True):
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
    validate_args : bool, default True
        Check the tensors (a training step that checked its data once passes False).

    Examples
    --------
    >>> t = torch.tensor
    >>> round(pinball_loss(t([1.0]), t([[0.0, 3.0]]), t([0.1, 0.9])).item(), 4)
    0.15
    """
    if validate_args:
        check_quantile_batch(quantiles, y, levels)
    diff = y[:, None] - quantiles
    return _reduce(torch.maximum(levels * diff, (levels - 1) * diff), reduction)


def nll_mixture(y, weights, means, stds, reduction="mean", *, validate_args=True):
    r"""Gaussian-mixture negative log-likelihood via ``torch.logsumexp``.

    Parameters
    ----------
    y : torch.Tensor, shape (n,)
    weights, means, stds : torch.Tensor, shape (n, K)
        Component weights (rows summing to 1), means and standard deviations (> 0).
    reduction : {"mean", "none"}, default "mean"
        ``"none"`` returns the (n,) tensor.
    validate_args : bool, default True
        Check the tensors (a training step that checked its data once passes False).

    Examples
    --------
    >>> t = torch.tensor
    >>> round(nll_mixture(t([0.0]), t([[0.5, 0.5]]), t([[0.0, 0.0]]), t([[1.0, 1.0]])).item(), 4)
    0.9189
    """
    if validate_args:
        y, weights, means, stds = _mixture(y, weights, means, stds)
    z = (y[:, None] - means) / stds
    log_comp = torch.log(weights) - 0.5 * z**2 - torch.log(stds) - _LOG_SQRT_2PI
    return _reduce(-torch.logsumexp(log_comp, dim=1), reduction)


def _a_term(m, s):
    z = m / s
    return m * (2 * _Phi(z) - 1) + 2 * s * _phi(z)


def crps_mixture(y, weights, means, stds, reduction="mean", *, validate_args=True):
    r"""Closed-form CRPS of Gaussian mixtures (see :func:`calibtut.metrics.scores.crps_mixture`).

    Parameters
    ----------
    y : torch.Tensor, shape (n,)
    weights, means, stds : torch.Tensor, shape (n, K)
        Component weights (rows summing to 1), means and standard deviations (> 0).
    reduction : {"mean", "none"}, default "mean"
        ``"none"`` returns the (n,) tensor.
    validate_args : bool, default True
        Check the tensors (a training step that checked its data once passes False).

    Examples
    --------
    >>> t = torch.tensor
    >>> round(crps_mixture(t([0.0]), t([[1.0]]), t([[0.0]]), t([[1.0]])).item(), 4)
    0.2337
    """
    if validate_args:
        y, weights, means, stds = _mixture(y, weights, means, stds)
    first = torch.sum(weights * _a_term(y[:, None] - means, stds), dim=1)
    pair_m = means[:, :, None] - means[:, None, :]
    pair_s = torch.sqrt(stds[:, :, None] ** 2 + stds[:, None, :] ** 2)
    pair_w = weights[:, :, None] * weights[:, None, :]
    second = 0.5 * torch.sum(pair_w * _a_term(pair_m, pair_s), dim=(1, 2))
    return _reduce(first - second, reduction)

def pit_mixture(y, weights, means, stds, *, validate_args=True):
    r"""Differentiable mixture CDF :math:`\sum_k w_k \Phi((y - \mu_k)/\sigma_k)`, the PIT.

    Parameters
    ----------
    y : torch.Tensor, shape (n,)
    weights, means, stds : torch.Tensor, shape (n, K)
    validate_args : bool, default True
        Check the tensors (a training step that checked its data once passes False).

    Returns
    -------
    torch.Tensor, shape (n,)

    Examples
    --------
    >>> t = torch.tensor
    >>> pit_mixture(t([0.0]), t([[0.5, 0.5]]), t([[-1.0, 1.0]]), t([[1.0, 1.0]]))
    tensor([0.5000])
    """
    if validate_args:
        y, weights, means, stds = _mixture(y, weights, means, stds)
    z = (y[:, None] - means) / stds
    return torch.sum(weights * 0.5 * torch.erfc(-z / math.sqrt(2.0)), dim=1)
